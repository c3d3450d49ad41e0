package integration

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
	"github.com/vishvananda/netns"
)

// internet is the egress tests' outside world: netns "eginet" joined to the
// host by link "xeginet" (11.210.0.1/24, the uplink the daemon masquerades
// out of), holding 11.210.0.2 (HTTP :80 and :25, and a DNS server that
// records every query) and 11.210.0.3 (HTTP :80). It has no route beyond
// its /24: a sandbox gets answers only through the host's masquerade.
type internet struct {
	mu      sync.Mutex
	queries []string          // every name the DNS server was asked
	peers   map[string]bool   // source addresses the HTTP servers saw
	names   map[string]string // name → IPv4 answers that override the defaults below
}

const (
	inetNS   = "eginet"
	inetLink = "xeginet"
	inetA    = "11.210.0.2"
	inetB    = "11.210.0.3"
)

func newInternet(t *testing.T) *internet {
	t.Helper()
	sh := func(cmd string) {
		t.Helper()
		if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", cmd, err, out)
		}
	}
	_ = exec.Command("ip", "netns", "del", inetNS).Run()
	_ = exec.Command("ip", "link", "del", inetLink).Run()
	sh("ip netns add " + inetNS)
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", inetLink).Run()
		_ = exec.Command("ip", "netns", "del", inetNS).Run()
	})
	sh("ip link add " + inetLink + " type veth peer name eth0 netns " + inetNS)
	sh("ip addr add 11.210.0.1/24 dev " + inetLink + " && ip link set " + inetLink + " up")
	sh("ip -n " + inetNS + " addr add " + inetA + "/24 dev eth0 && ip -n " + inetNS + " addr add " + inetB + "/24 dev eth0")
	sh("ip -n " + inetNS + " link set eth0 up && ip -n " + inetNS + " link set lo up")
	in := &internet{peers: map[string]bool{}, names: map[string]string{}}
	for _, a := range []string{inetA + ":80", inetA + ":25", inetB + ":80"} {
		in.serveHTTP(t, a)
	}
	in.serveDNS(t)
	return in
}

// listen opens a socket inside the internet's netns.
func listen(t *testing.T, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its netns
		ns, err := netns.GetFromName(inetNS)
		if err == nil {
			defer ns.Close()
			err = netns.Set(ns)
		}
		if err == nil {
			err = fn()
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func (in *internet) serveHTTP(t *testing.T, addr string) {
	var ln net.Listener
	listen(t, func() (err error) { ln, err = net.Listen("tcp4", addr); return err })
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		in.mu.Lock()
		in.peers[host] = true
		in.mu.Unlock()
		fmt.Fprintf(w, "hello from %s", addr)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// serveDNS answers every A query (other.test → inetB, anything else →
// inetA, TTL 60) on inetA:53, UDP and TCP, recording the name.
func (in *internet) serveDNS(t *testing.T) {
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if len(r.Question) == 1 {
			q := r.Question[0]
			ip := inetA
			if strings.EqualFold(q.Name, "other.test.") {
				ip = inetB
			}
			in.mu.Lock()
			in.queries = append(in.queries, strings.TrimSuffix(strings.ToLower(q.Name), "."))
			if a, ok := in.names[strings.TrimSuffix(strings.ToLower(q.Name), ".")]; ok {
				ip = a // under mu: a test may change an answer while the server runs
			}
			in.mu.Unlock()
			if q.Qtype == dns.TypeA {
				rr, _ := dns.NewRR(q.Name + " 60 IN A " + ip)
				m.Answer = append(m.Answer, rr)
			}
		}
		_ = w.WriteMsg(m)
	})
	var pc net.PacketConn
	var ln net.Listener
	listen(t, func() (err error) {
		if pc, err = net.ListenPacket("udp4", inetA+":53"); err != nil {
			return err
		}
		ln, err = net.Listen("tcp4", inetA+":53")
		return err
	})
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go s.ActivateAndServe()
		t.Cleanup(func() { s.Shutdown() })
	}
}

// asked reports whether the DNS server ever saw a query for name.
func (in *internet) asked(name string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, q := range in.queries {
		if q == name {
			return true
		}
	}
	return false
}

func (in *internet) sawPeer(addr string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.peers[addr]
}
