package socks

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/egresstest"
	"github.com/sbx-dev/sbx/internal/egress/guard"
	"github.com/sbx-dev/sbx/internal/egress/socks/socks5test"
)

// echoServer answers every connection with "echo:" and what it read
// until the client half-closes.
func echoServer(t *testing.T) string {
	return egresstest.Listen(t, "tcp", "127.0.0.1:0", func(_ context.Context, c net.Conn) {
		defer c.Close()
		b, _ := io.ReadAll(c)
		_, _ = c.Write(append([]byte("echo:"), b...))
	})
}

// proxyTo starts a SOCKS5 test server whose every CONNECT goes to upstream.
func proxyTo(t *testing.T, upstream, user, pass string) (*socks5test.Server, string) {
	s := &socks5test.Server{Username: user, Password: pass,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", upstream)
		}}
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, addr
}

type blockRec struct {
	mu      sync.Mutex
	reasons []string
	details []string
}

func (b *blockRec) add(_, _, reason, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reasons, b.details = append(b.reasons, reason), append(b.details, detail)
}

func (b *blockRec) get() ([]string, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.reasons...), append([]string(nil), b.details...)
}

// startTunnel serves a Tunnel whose sandbox "sb" (any source) has pol and
// whose every connection claims destination dst; mods change it before it
// serves.
func startTunnel(t *testing.T, pol *egress.Policy, dst netip.AddrPort, res *egress.Resolutions, mods ...func(*Tunnel)) (*Tunnel, string, *blockRec) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	br := &blockRec{}
	d := &Dialer{Ranges: egress.Ranges{Open: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, Timeout: 2 * time.Second}
	tun := &Tunnel{
		Lookup: func(netip.Addr) (string, egress.Policy, bool) {
			if pol == nil {
				return "", egress.Policy{}, false
			}
			return "sb", *pol, true
		},
		Resolved: res.Has, NameOf: res.NameOf, Dial: d.Dial, Blocked: br.add, HandshakeTimeout: time.Second,
		origDst: func(net.Conn) (netip.AddrPort, error) { return dst, nil },
	}
	for _, mod := range mods {
		mod(tun)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tun.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return tun, ln.Addr().String(), br
}

// exchange sends msg through the tunnel, half-closes and reads the answer.
func exchange(t *testing.T, addr, msg string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err // a reset can beat connect's own check
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	_ = c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	return string(b), err
}

func TestTunnel(t *testing.T) {
	up := echoServer(t)
	res := &egress.Resolutions{}
	res.Add("sb", "allowed.test", []netip.Addr{netip.MustParseAddr("11.0.0.2")}, time.Minute)
	res.Add("sb", "elsewhere.test", []netip.Addr{netip.MustParseAddr("11.0.0.9")}, time.Minute)
	open, _ := egress.Parse(nil, nil, nil)
	deny, _ := egress.Parse(nil, nil, []string{"11.0.0.0/8"})
	doms, _ := egress.Parse(nil, []string{"allowed.test", "12.0.0.0/8"}, nil)
	get := func(host string) string { return "GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n" }
	for _, tt := range []struct {
		name   string
		pol    egress.Policy
		proxy  bool
		dst    string
		msg    string
		asked  string // what the proxy was asked for; "" = nothing
		reason string // refusal reason; "" = tunnelled
	}{
		{"open policy, ip", open, true, "11.0.0.1:22", "ssh", "11.0.0.1:22", ""},
		{"always blocked", open, true, "10.0.0.1:80", "x", "", guard.ReasonIPBlocked},
		{"metadata", open, true, "169.254.169.254:80", "x", "", guard.ReasonIPBlocked},
		{"denyOut", deny, true, "11.0.0.1:80", "x", "", guard.ReasonIPDenied},
		{"domain via host", doms, true, "11.0.0.2:80", get("allowed.test"), "allowed.test:80", ""},
		{"domain, other name", doms, true, "11.0.0.2:80", get("other.test"), "", guard.ReasonNameNotAllowed},
		{"domain, spoofed address", doms, true, "11.0.0.3:80", get("allowed.test"), "", guard.ReasonNotResolved},
		{"domain, no host", doms, true, "11.0.0.2:80", "junk\r\n\r\n", "", guard.ReasonBadRequest},
		{"domain, other port by resolution", doms, true, "11.0.0.2:5432", "pg", "allowed.test:5432", ""},
		{"domain, other port unresolved", doms, true, "11.0.0.7:5432", "pg", "", guard.ReasonNotResolved},
		{"domain, other port, name not allowed", doms, true, "11.0.0.9:5432", "pg", "", guard.ReasonNotResolved},
		{"domain policy, allowed cidr", doms, true, "12.1.2.3:443", "tls", "12.1.2.3:443", ""},
		{"not proxied", open, false, "11.0.0.1:22", "x", "", ReasonNotProxied},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, paddr := proxyTo(t, up, "", "")
			pol := tt.pol
			if tt.proxy {
				pol.Proxy = &egress.Proxy{Address: publicProxy}
			}
			_, addr, br := startTunnel(t, &pol, netip.MustParseAddrPort(tt.dst), res, proxyAt(paddr))
			got, err := exchange(t, addr, tt.msg)
			reasons, _ := br.get()
			if tt.reason == "" {
				if err != nil || got != "echo:"+tt.msg {
					t.Errorf("answer %q, %v; want the echo", got, err)
				}
				if len(reasons) > 0 {
					t.Errorf("refused: %v", reasons)
				}
			} else {
				if !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("client got %q, %v; want a reset", got, err)
				}
				waitReason(t, br, tt.reason)
			}
			if asked := strings.Join(srv.Requests(), ","); asked != tt.asked {
				t.Errorf("proxy asked for %q, want %q", asked, tt.asked)
			}
		})
	}
}

// publicProxy is a proxy address anyone may reach (not in
// egress.AlwaysBlocked, not the host's): proxyAt makes the tunnel's
// dialer reach the test's proxy when it dials it.
const publicProxy = "11.9.9.9:1080"

// proxyAt makes the tunnel dial real (the test proxy at real) whenever it
// dials publicProxy; other proxy addresses are dialled as they are.
func proxyAt(real string) func(*Tunnel) {
	return func(tun *Tunnel) {
		d := &Dialer{Ranges: egress.Ranges{Open: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, Timeout: 2 * time.Second,
			dial: func(ctx context.Context, addr string) (net.Conn, error) {
				if addr == publicProxy {
					addr = real
				}
				var nd net.Dialer
				return nd.DialContext(ctx, "tcp", addr)
			}}
		tun.Dial = d.Dial
	}
}

// TestTunnelRebinding: a proxy at an address only the operator opened
// (--egress-proxy-open: here 127.0.0.1, as a proxy on the sbx host) is
// asked for the address the daemon checked, never for the name, which it
// would resolve again: a name answering the daemon's DNS filter with a
// public address and the proxy with 127.0.0.1 (DNS rebinding) reached the
// proxy host's loopback services. Before, every domain-matched flow asked
// for the name.
func TestTunnelRebinding(t *testing.T) {
	up := echoServer(t)
	res := &egress.Resolutions{}
	res.Add("sb", "rebind.test", []netip.Addr{netip.MustParseAddr("11.0.0.2")}, time.Minute)
	doms, _ := egress.Parse(nil, []string{"rebind.test"}, nil)
	for _, tt := range []struct{ name, dst, msg, asked string }{
		{"by host", "11.0.0.2:80", "GET / HTTP/1.1\r\nHost: rebind.test\r\n\r\n", "11.0.0.2:80"},
		{"by resolution, other port", "11.0.0.2:6379", "INFO", "11.0.0.2:6379"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, paddr := proxyTo(t, up, "", "")
			pol := doms
			pol.Proxy = &egress.Proxy{Address: paddr}
			_, addr, _ := startTunnel(t, &pol, netip.MustParseAddrPort(tt.dst), res)
			if got, err := exchange(t, addr, tt.msg); err != nil || got != "echo:"+tt.msg {
				t.Errorf("answer %q, %v; want the echo", got, err)
			}
			if asked := strings.Join(srv.Requests(), ","); asked != tt.asked {
				t.Errorf("proxy at an opened address asked for %q, want %q (the checked address)", asked, tt.asked)
			}
		})
	}
}

// TestTunnelRefusesHostAddr: a destination that is one of the host's own
// addresses outside the always-blocked ranges (an uplink's public address)
// is refused before the proxy hears of it, whatever the policy: the proxy
// (on the host, or in the operator's network) would connect to the host's
// services, which the kernel keeps from a direct sandbox. Before, an open
// policy asked the proxy for it (integration TestEgressProxy `tunnelled`:
// a host service on the uplink's 11.210.0.1 answered the sandbox).
func TestTunnelRefusesHostAddr(t *testing.T) {
	up := echoServer(t)
	res := &egress.Resolutions{}
	res.Add("sb", "host.test", []netip.Addr{netip.MustParseAddr("11.0.0.1")}, time.Minute)
	open, _ := egress.Parse(nil, nil, nil)
	cidr, _ := egress.Parse(nil, []string{"11.0.0.0/8"}, []string{"0.0.0.0/0"})
	doms, _ := egress.Parse(nil, []string{"host.test"}, nil)
	for name, pol := range map[string]egress.Policy{"open": open, "allowOut cidr": cidr, "allowOut name": doms} {
		t.Run(name, func(t *testing.T) {
			srv, paddr := proxyTo(t, up, "", "")
			pol.Proxy = &egress.Proxy{Address: paddr}
			_, addr, br := startTunnel(t, &pol, netip.MustParseAddrPort("11.0.0.1:8080"), res, func(tun *Tunnel) {
				tun.hostAddr = func(ip netip.Addr) bool { return ip == netip.MustParseAddr("11.0.0.1") }
			})
			if got, err := exchange(t, addr, "x"); !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("client got %q, %v; want a reset", got, err)
			}
			waitReason(t, br, guard.ReasonHostAddr)
			if r := srv.Requests(); len(r) > 0 {
				t.Errorf("the proxy was asked for %v", r)
			}
		})
	}
}

func waitReason(t *testing.T, br *blockRec, want string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if r, _ := br.get(); len(r) > 0 {
			if r[0] != want {
				t.Errorf("reason %q, want %q", r[0], want)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("no refusal reported, want %q", want)
}

// TestTunnelFailsClosed: a proxy that is down, rejects the credentials or
// is not SOCKS5 resets the sandbox's connection, with the reason reported
// and the password in no detail.
func TestTunnelFailsClosed(t *testing.T) {
	up := echoServer(t)
	_, authAddr := proxyTo(t, up, "user", "right")
	httpd := junkServer(t)
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	for _, tt := range []struct {
		name, addr, user, pass, reason string
	}{
		{"dead", deadAddr, "", "", ReasonProxyUnreachable},
		{"wrong password", authAddr, "user", "wrong-pw", ReasonProxyAuth},
		{"no credentials", authAddr, "", "", ReasonProxyAuth},
		{"not socks", httpd, "", "", ReasonProxyProtocol},
		{"address not allowed", "192.168.7.7:1080", "", "", ReasonProxyAddress},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pol := egress.Policy{Proxy: &egress.Proxy{Address: tt.addr, Username: tt.user, Password: egress.Secret(tt.pass)}}
			_, addr, br := startTunnel(t, &pol, netip.MustParseAddrPort("11.0.0.1:80"), &egress.Resolutions{})
			got, err := exchange(t, addr, "hello")
			if !errors.Is(err, syscall.ECONNRESET) || got != "" {
				t.Errorf("client got %q, %v; want a reset", got, err)
			}
			waitReason(t, br, tt.reason)
			if _, details := br.get(); tt.pass != "" && strings.Contains(strings.Join(details, " "), tt.pass) {
				t.Errorf("detail holds the password: %v", details)
			}
		})
	}
}

// junkServer answers every connection with an HTTP error and closes.
func junkServer(t *testing.T) string {
	return egresstest.Listen(t, "tcp", "127.0.0.1:0", func(_ context.Context, c net.Conn) {
		_, _ = c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
		c.Close()
	})
}

// TestTunnelStreams: a large transfer both ways and a long-lived,
// trickling connection go through whole.
func TestTunnelStreams(t *testing.T) {
	up := echoServer(t)
	_, paddr := proxyTo(t, up, "u", "p")
	pol := egress.Policy{Proxy: &egress.Proxy{Address: paddr, Username: "u", Password: "p"}}
	_, addr, _ := startTunnel(t, &pol, netip.MustParseAddrPort("11.0.0.1:9000"), &egress.Resolutions{})
	big := strings.Repeat("0123456789abcdef", 1<<20) // 16 MiB
	if got, err := exchange(t, addr, big); err != nil || got != "echo:"+big {
		t.Fatalf("16 MiB echo: %d bytes, %v", len(got), err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 10; i++ { // 1 s of trickle
		if _, err := c.Write([]byte{'a' + byte(i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "echo:abcdefghij" {
		t.Fatalf("trickle: %q, %v", b, err)
	}
}

func TestRanges(t *testing.T) {
	r := egress.Ranges{Open: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.214.0.0/16")},
		Never: []netip.Prefix{netip.MustParsePrefix("10.214.0.0/16")}}
	for ip, want := range map[string]bool{
		"1.1.1.1": true, "127.0.0.1": true, "127.0.0.2": false, "10.214.0.5": false, "169.254.169.254": false,
		"192.168.1.1": false, "0.0.0.0": false, "::1": false, "2606:4700::1111": true, "::ffff:127.0.0.1": true,
	} {
		if got := r.Allowed(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", ip, got, want)
		}
	}
	// Public: allowed without the operator's exceptions (a proxy there
	// may be asked for names; Target.ask).
	for ip, want := range map[string]bool{
		"1.1.1.1": true, "2606:4700::1111": true, "127.0.0.1": false, "::ffff:127.0.0.1": false, "10.214.0.5": false,
	} {
		if got := r.Public(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Public(%s) = %v, want %v", ip, got, want)
		}
	}
}

func TestDialerCheck(t *testing.T) {
	d := &Dialer{Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "public.test":
			return []netip.Addr{netip.MustParseAddr("1.2.3.4")}, nil
		case "mixed.test":
			return []netip.Addr{netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("10.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}}
	for addr, ok := range map[string]bool{
		"public.test:1080": true, "1.2.3.4:1080": true, "mixed.test:1080": false, "nxdomain.test:1080": false,
		"127.0.0.1:1080": false, "10.1.2.3:1080": false, "[::1]:1080": false,
	} {
		err := d.Check(context.Background(), egress.Proxy{Address: addr})
		if (err == nil) != ok || err != nil && !errors.Is(err, ErrProxyAddress) {
			t.Errorf("Check(%s) = %v, want ok=%v", addr, err, ok)
		}
	}
}

// TestTunnelForget: Forget closes a sandbox's open tunnelled connections
// (its link is gone), the proxy side included.
func TestTunnelForget(t *testing.T) {
	up := echoServer(t)
	_, paddr := proxyTo(t, up, "", "")
	pol := egress.Policy{Proxy: &egress.Proxy{Address: paddr}}
	tun, addr, _ := startTunnel(t, &pol, netip.MustParseAddrPort("11.0.0.1:9000"), &egress.Resolutions{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("held open")); err != nil {
		t.Fatal(err)
	}
	for i := 0; tun.Open("sb") != 1; i++ {
		if i == 100 {
			t.Fatal("connection not tracked")
		}
		time.Sleep(10 * time.Millisecond)
	}
	tun.Forget("sb")
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) || len(b) != 0 {
		t.Fatalf("after Forget: read %q, %v; want the connection closed", b, err)
	}
	if n := tun.Open("sb"); n != 0 {
		t.Errorf("%d connections left", n)
	}
}

// TestTunnelIntercept: a connection admitted by its name is offered to
// Intercept with that name, and the dial it is given reaches the name
// through the sandbox's proxy (rules apply before the proxy); an
// IP-admitted one is not offered.
func TestTunnelIntercept(t *testing.T) {
	up := echoServer(t)
	srv, paddr := proxyTo(t, up, "", "")
	res := &egress.Resolutions{}
	res.Add("sb", "allowed.test", []netip.Addr{netip.MustParseAddr("11.0.0.2")}, time.Minute)
	doms, _ := egress.Parse(nil, []string{"allowed.test", "12.0.0.0/8"}, nil)
	doms.Proxy = &egress.Proxy{Address: publicProxy}
	for _, tt := range []struct {
		name, dst, msg, offered string
	}{
		{"by name", "11.0.0.2:80", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test"},
		{"by address", "12.0.0.1:80", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tun, addr, _ := startTunnel(t, &doms, netip.MustParseAddrPort(tt.dst), res, proxyAt(paddr))
			var mu sync.Mutex
			offered := ""
			tun.Intercept = func(ctx context.Context, c net.Conn, _, name string, _ netip.AddrPort, peeked []byte,
				dial func(context.Context, string, string) (net.Conn, error)) bool {
				mu.Lock()
				offered = name
				mu.Unlock()
				u, err := dial(ctx, "tcp", "ignored:1")
				if err != nil {
					return false
				}
				defer u.Close()
				_, _ = u.Write(append([]byte("intercepted:"), peeked...))
				_ = u.(*net.TCPConn).CloseWrite()
				b, _ := io.ReadAll(u)
				_, _ = c.Write(b)
				return true
			}
			n := len(srv.Requests())
			got, err := exchange(t, addr, tt.msg)
			mu.Lock()
			defer mu.Unlock()
			if offered != tt.offered || err != nil {
				t.Fatalf("offered %q (err %v), want %q", offered, err, tt.offered)
			}
			if tt.offered != "" && (got != "echo:intercepted:"+tt.msg || srv.Requests()[n] != "allowed.test:80") {
				t.Errorf("intercepted: got %q, proxy asked %v", got, srv.Requests()[n:])
			}
		})
	}
}
