package network

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/egresstest"
)

func mustPolicy(t *testing.T, allowNet *bool, allow, deny []string) egress.Policy {
	t.Helper()
	p, err := egress.Parse(allowNet, allow, deny)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEgressPolicy: per-sandbox policies decide, in the kernel, what a
// sandbox reaches through the masquerade; blocked ranges, the host and
// other sandboxes stay closed whatever the policy says.
func TestEgressPolicy(t *testing.T) {
	m := testManager(t, testConfig(41))
	in := newInternet(t, 41)
	a := setup(t, m, "a41aaaaaaaaaaaaaaaaa")
	b := setup(t, m, "b41bbbbbbbbbbbbbbbbb")
	listenIn(t, b, 4999)
	hostPort := hostServer(t)
	reach := func(to string) bool { return retry(3, func() error { return dialFrom(t, a, to) }) == nil }
	no := false
	cases := []struct {
		name   string
		p      *egress.Policy
		ra, rb bool // reaches in.a, in.b
	}{
		{"no policy yet: fenced", nil, false, false},
		{"default: internet", ptr(mustPolicy(t, nil, nil, nil)), true, true},
		{"no internet", ptr(mustPolicy(t, &no, nil, nil)), false, false},
		{"denyOut one", ptr(mustPolicy(t, nil, nil, []string{in.b.String()})), true, false},
		{"deny all but one", ptr(mustPolicy(t, nil, []string{in.a.String() + "/32"}, []string{"0.0.0.0/0"})), true, false},
		{"allow wins over deny", ptr(mustPolicy(t, nil, []string{"11.233.41.0/24", in.b.String()}, []string{"11.0.0.0/8"})), true, true},
		{"domains only", ptr(mustPolicy(t, nil, []string{"example.com"}, nil)), false, false},
	}
	for _, c := range cases {
		if c.p != nil {
			if err := m.SetPolicy(context.Background(), a.ID, *c.p); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		ga := probe(c.ra, func() error { return dialFrom(t, a, in.addr(in.a)) })
		gb := probe(c.rb, func() error { return dialFrom(t, a, in.addr(in.b)) })
		if ga != c.ra || gb != c.rb {
			t.Errorf("%s: reach %s, %s = %v, %v; want %v, %v\n%s", c.name, in.a, in.b, ga, gb, c.ra, c.rb, hostState(m))
		}
		if c.p == nil || c.p.DenyAll {
			continue
		}
		for what, to := range map[string]string{
			"own host side":   netip.AddrPortFrom(a.HostIP, hostPort).String(),
			"other host side": netip.AddrPortFrom(b.HostIP, hostPort).String(),
			"uplink address":  netip.AddrPortFrom(in.host, hostPort).String(),
			"other sandbox":   netip.AddrPortFrom(b.SandboxIP, 4999).String(),
			"metadata":        "169.254.169.254:80",
		} {
			if reach(to) {
				t.Errorf("%s: sandbox reached %s (%s)", c.name, what, to)
			}
		}
	}
	// A resolved address opens for its TTL under a domain policy.
	if err := m.AddResolved(a.ID, []netip.Addr{in.b}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if !probe(true, func() error { return dialFrom(t, a, in.addr(in.b)) }) || reach(in.addr(in.a)) {
		t.Error("resolved address: want only in.b reachable")
	}
	if err := m.AddResolved(a.ID, []netip.Addr{in.b}, 50*time.Minute); err != nil {
		t.Fatal(err)
	}
	if set := run(t, "nft", "list", "set", "inet", m.cfg.Table, "dns-"+a.HostIf); !strings.Contains(set, "timeout 50m") {
		t.Errorf("a renewed resolution keeps its old lifetime:\n%s", set)
	}
	if id, p, ok := m.PolicyOf(a.SandboxIP); !ok || id != a.ID || !p.DenyAll {
		t.Errorf("PolicyOf = %q %+v %v", id, p, ok)
	}
	if err := m.Teardown(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if left := residue(t, m, a); len(left) > 0 {
		t.Errorf("residue: %v\n%s", left, run(t, "nft", "list", "table", "inet", m.cfg.Table))
	}
	if out := run(t, "nft", "list", "table", "inet", m.cfg.Table); strings.Contains(out, a.HostIf) {
		t.Errorf("nft objects of %s left:\n%s", a.HostIf, out)
	}
}

func ptr[T any](v T) *T { return &v }

// TestEgressCaps: a sandbox cannot hold more than MaxConns connections nor
// open them faster than ConnRate (burst ConnBurst); others are unaffected.
func TestEgressCaps(t *testing.T) {
	cfg := testConfig(42)
	cfg.Egress = Egress{MaxConns: 3, ConnRate: 1000}
	m := testManager(t, cfg)
	in := newInternet(t, 42)
	hold := holdServer(t, in, in.a, 8081)
	a := setup(t, m, "a42aaaaaaaaaaaaaaaaa")
	if err := m.SetPolicy(context.Background(), a.ID, egress.Policy{}); err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	opened := 0
	for i := range 6 {
		// The first MaxConns dials are answered, however late on a loaded
		// host (a dial given up on would still hold its conntrack entry,
		// and the cap); the ones past it are dropped, never answered.
		timeout := 500 * time.Millisecond
		if i < 3 {
			timeout = 10 * time.Second
		}
		_ = inNet(t, a, func() error {
			c, err := net.DialTimeout("tcp", hold, timeout)
			if err == nil {
				conns, opened = append(conns, c), opened+1
			}
			return nil
		})
	}
	if opened != 3 {
		t.Errorf("%d concurrent connections opened, want 3 (MaxConns)", opened)
	}

	cfg2 := testConfig(43)
	cfg2.Egress = Egress{ConnRate: 2, ConnBurst: 2}
	m2 := testManager(t, cfg2)
	b := setup(t, m2, "b43bbbbbbbbbbbbbbbbb")
	if err := m2.SetPolicy(context.Background(), b.ID, egress.Policy{}); err != nil {
		t.Fatal(err)
	}
	ok := 0
	for range 10 {
		if dialFrom(t, b, in.addr(in.b)) == nil {
			ok++
		}
	}
	if ok < 1 || ok > 6 {
		t.Errorf("%d of 10 back-to-back connections opened at 2/s burst 2", ok)
	}
}

// holdServer accepts connections on a:port in the internet and keeps them
// open until cleanup.
func holdServer(t *testing.T, in *internet, a netip.Addr, port uint16) string {
	addr := netip.AddrPortFrom(a, port).String()
	var ln net.Listener
	if err := inNS(in.ns, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	egresstest.Serve(t, ln, func(ctx context.Context, c net.Conn) {
		<-ctx.Done()
		c.Close()
	})
	return addr
}

// TestGuardRedirect: with a guard port, TCP 80/443 of a domain-policy
// sandbox to a resolved address goes to the guard on the host (here a
// plain server); other ports and other policies are not redirected.
func TestGuardRedirect(t *testing.T) {
	m, in, a := withGuard(t, 44)
	reachAs := func(want bool, port int) bool {
		return probe(want, func() error { return dialFrom(t, a, netip.AddrPortFrom(in.a, uint16(port)).String()) })
	}
	reach := func(port int) bool { return reachAs(false, port) }
	if err := m.SetPolicy(context.Background(), a.ID, mustPolicy(t, nil, []string{"example.com"}, nil)); err != nil {
		t.Fatal(err)
	}
	if reach(80) {
		t.Error("unresolved address redirected to the guard")
	}
	if err := m.AddResolved(a.ID, []netip.Addr{in.a}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if !reachAs(true, 80) || !reachAs(true, 443) || !reachAs(true, 8080) {
		t.Error("resolved address: 80/443 must reach the guard, 8080 the internet")
	}
	if err := m.SetPolicy(context.Background(), a.ID, egress.Policy{}); err != nil {
		t.Fatal(err)
	}
	if reach(80) {
		t.Error("open policy redirected to the guard")
	}
	if err := m.Teardown(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if out := run(t, "nft", "list", "table", "inet", m.cfg.Table); strings.Contains(out, a.HostIf) {
		t.Errorf("nft objects of %s left:\n%s", a.HostIf, out)
	}
}

// withGuard is test n's manager with a guard port (a plain server on the
// host), its internet and one sandbox link.
func withGuard(t *testing.T, n int) (*Manager, *internet, *Link) {
	t.Helper()
	guard, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, guard)
	cfg := testConfig(n)
	cfg.Egress = Egress{GuardPort: uint16(guard.Addr().(*net.TCPAddr).Port)}
	m := testManager(t, cfg)
	return m, newInternet(t, n), setup(t, m, fmt.Sprintf("a%daaaaaaaaaaaaaaaaa", n))
}
