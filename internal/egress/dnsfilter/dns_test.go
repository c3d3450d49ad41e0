package dnsfilter

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/sbx-dev/sbx/internal/egress"
)

// upstream is a recording DNS server standing in for the internet's resolver.
type upstream struct {
	mu      sync.Mutex
	queries []string
}

func (u *upstream) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	u.mu.Lock()
	u.queries = append(u.queries, r.Question[0].Name)
	u.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(r)
	rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A 93.184.216.34")
	m.Answer = append(m.Answer, rr)
	_ = w.WriteMsg(m)
}

func startUDP(t *testing.T, h dns.Handler) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dns.Server{PacketConn: pc, Handler: h}
	go s.ActivateAndServe()
	t.Cleanup(func() { s.Shutdown() })
	return pc.LocalAddr().String()
}

func TestDNSFilter(t *testing.T) {
	up := &upstream{}
	upAddr := startUDP(t, up)
	denyAll, _ := egress.Parse(boolp(false), nil, nil)
	allowList, _ := egress.Parse(nil, []string{"*.example.com"}, nil)
	policies := map[string]egress.Policy{"127.0.0.1": allowList}
	var mu sync.Mutex
	var resolved []netip.Addr
	f := &Filter{
		Upstream: upAddr,
		Lookup: func(src netip.Addr) (string, egress.Policy, bool) {
			mu.Lock()
			defer mu.Unlock()
			p, ok := policies[src.String()]
			return "sbx1", p, ok
		},
		Resolved: func(_, _ string, a []netip.Addr, ttl time.Duration) {
			mu.Lock()
			resolved = append(resolved, a...)
			mu.Unlock()
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := "127.0.0.1:15353"
	go f.ListenAndServe(ctx, addr)
	time.Sleep(100 * time.Millisecond)
	ask := func(name string, qt uint16) int {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qt)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
		if err != nil {
			t.Fatalf("query %s: %v", name, err)
		}
		return r.Rcode
	}
	if rc := ask("www.example.com", dns.TypeA); rc != dns.RcodeSuccess {
		t.Fatalf("allowed name rcode %d", rc)
	}
	if rc := ask("evil-example.com", dns.TypeA); rc != dns.RcodeRefused {
		t.Fatalf("disallowed name rcode %d", rc)
	}
	if rc := ask("x.example.com", dns.TypeTXT); rc != dns.RcodeRefused {
		t.Fatalf("TXT rcode %d", rc)
	}
	mu.Lock()
	policies["127.0.0.1"] = denyAll
	mu.Unlock()
	if rc := ask("www.example.com", dns.TypeA); rc != dns.RcodeRefused {
		t.Fatalf("deny-all rcode %d", rc)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.queries) != 1 || up.queries[0] != "www.example.com." {
		t.Fatalf("upstream saw %v, want only the one allowed query", up.queries)
	}
	if len(resolved) != 1 || resolved[0].String() != "93.184.216.34" {
		t.Fatalf("resolved = %v", resolved)
	}
}

func boolp(b bool) *bool { return &b }
