package guard

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/egress"
)

// The kernel path for real: a "sandbox" netns routed through a veth to a
// "host" netns whose nftables (table inet sn_guard) redirects TCP 443 to
// the guard. SO_ORIGINAL_DST (IPv4) and IP6T_SO_ORIGINAL_DST (IPv6) must
// give the address the sandbox dialed; then the name check decides. Both
// namespaces are anonymous and die with the test (their links and table
// with them): nothing on the machine's own network is touched.
func TestGuardRedirectedByKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI: this test needs root")
		}
		t.Skip("needs root")
	}
	host, sbx := newTestNS(t), newTestNS(t)
	linkNamespaces(t, host, sbx)
	var ln net.Listener
	inTestNS(t, host, func() (err error) { ln, err = net.Listen("tcp", ":0"); return err })
	redirect443(t, host, uint16(ln.Addr().(*net.TCPAddr).Port))

	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello from "+r.Host)
	}))
	defer srv.Close()
	res := &egress.Resolutions{}
	res.Add("sb1", "example.com", addrs("93.184.216.34", "2606:2800:220:1::1"), time.Minute)
	blocked := make(chan block, 8)
	var mu sync.Mutex // guards dialed
	var dialed []string
	lastDial := func() string { mu.Lock(); defer mu.Unlock(); return dialed[len(dialed)-1] }
	g := &Guard{
		Lookup: func(src netip.Addr) (string, egress.Policy, bool) {
			ok := src == netip.MustParseAddr("10.211.7.2") || src == netip.MustParseAddr("fd00:211::2")
			return "sb1", allowExample(t), ok
		},
		Resolved: res.Has,
		Blocked:  func(sb, dst, r string) { blocked <- block{sb, dst, r} },
		Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
		},
		Log: discardLog(),
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()

	for _, dst := range []string{"93.184.216.34:443", "[2606:2800:220:1::1]:443"} {
		t.Run("allowed "+dst, func(t *testing.T) {
			body := getThrough(t, sbx, dst, srv)
			if last := lastDial(); body != "hello from example.com" || last != dst {
				t.Fatalf("got %q, dialed %s", body, last)
			}
		})
	}
	for _, dst := range []string{"93.184.216.35:443", "[2606:2800:220:1::2]:443"} {
		t.Run("spoofed "+dst, func(t *testing.T) {
			c := dialFrom(t, sbx, dst)
			_, _ = c.Write(clientHello(t, &tls.Config{ServerName: "example.com"}))
			select {
			case b := <-blocked:
				if b.reason != ReasonNotResolved || b.dst != dst {
					t.Fatalf("blocked %+v, want %s for %s", b, ReasonNotResolved, dst)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("not blocked")
			}
			wantClosed(t, c)
		})
	}
}

// getThrough fetches https://example.com/ from inside ns, dialing dst.
func getThrough(t *testing.T, ns netns.NsHandle, dst string, srv *httptest.Server) string {
	t.Helper()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	tr.DialContext = func(context.Context, string, string) (net.Conn, error) { return dialFrom(t, ns, dst), nil }
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("https://example.com/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dialFrom opens a TCP connection to dst from inside ns.
func dialFrom(t *testing.T, ns netns.NsHandle, dst string) net.Conn {
	t.Helper()
	var c net.Conn
	inTestNS(t, ns, func() (err error) { c, err = net.DialTimeout("tcp", dst, 10*time.Second); return err })
	t.Cleanup(func() { c.Close() })
	return c
}

// newTestNS makes an anonymous network namespace, alive until the test ends.
func newTestNS(t *testing.T) netns.NsHandle {
	t.Helper()
	type result struct {
		ns  netns.NsHandle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		ns, err := netns.New()
		ch <- result{ns, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("new netns: %v", r.err)
	}
	t.Cleanup(func() { r.ns.Close() })
	return r.ns
}

// inTestNS runs fn on a thread inside ns; sockets fn opens stay there.
func inTestNS(t *testing.T, ns netns.NsHandle, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is discarded
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// linkNamespaces joins host and sbx with a veth pair: host end 10.211.7.1/30
// and fd00:211::1/64, sandbox end .2 / ::2 with default routes to the host.
func linkNamespaces(t *testing.T, host, sbx netns.NsHandle) {
	t.Helper()
	hh, err := netlink.NewHandleAt(host)
	if err != nil {
		t.Fatal(err)
	}
	defer hh.Close()
	sh, err := netlink.NewHandleAt(sbx)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "snh0"}, PeerName: "sns0", PeerNamespace: netlink.NsFd(int(sbx))}
	if err := hh.LinkAdd(veth); err != nil {
		t.Fatalf("veth: %v", err)
	}
	configureLink(t, hh, "snh0", "10.211.7.1/30", "fd00:211::1/64")
	configureLink(t, sh, "sns0", "10.211.7.2/30", "fd00:211::2/64")
	link, _ := sh.LinkByName("sns0")
	for _, gw := range []string{"10.211.7.1", "fd00:211::1"} {
		if err := sh.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: net.ParseIP(gw)}); err != nil {
			t.Fatalf("route via %s: %v", gw, err)
		}
	}
}

func configureLink(t *testing.T, h *netlink.Handle, name string, cidrs ...string) {
	t.Helper()
	for _, n := range []string{"lo", name} {
		link, err := h.LinkByName(n)
		if err != nil {
			t.Fatal(err)
		}
		if n == name {
			for _, c := range cidrs {
				a, _ := netlink.ParseAddr(c)
				a.Flags = unix.IFA_F_NODAD // usable at once
				if err := h.AddrAdd(link, a); err != nil {
					t.Fatalf("address %s: %v", c, err)
				}
			}
		}
		if err := h.LinkSetUp(link); err != nil {
			t.Fatal(err)
		}
	}
}

// redirect443 adds, in ns, table inet sn_guard with
// "prerouting: tcp dport 443 redirect to :port".
func redirect443(t *testing.T, ns netns.NsHandle, port uint16) {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatal(err)
	}
	tbl := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "sn_guard"})
	ch := c.AddChain(&nftables.Chain{Name: "prerouting", Table: tbl, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest})
	c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(443)},
		&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Redir{RegisterProtoMin: 1},
	}})
	if err := c.Flush(); err != nil {
		t.Fatal(fmt.Errorf("nftables in the test netns: %w", err))
	}
}
