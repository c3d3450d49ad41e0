package network

import (
	"context"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress/egresstest"
)

// TestHeal: the table deleted under a live manager (nft flush ruleset, a
// firewall reload) is rebuilt by the next Setup, which then succeeds, and
// by Heal; live sandboxes get their own rules and policies back (a policy
// denying a CIDR denies it again, a sandbox without a policy stays
// fenced, the host and other sandboxes stay closed), and nothing is left
// once they are torn down.
func TestHeal(t *testing.T) {
	ctx := context.Background()
	m := testManager(t, testConfig(51))
	in := newInternet(t, 51)
	a := setup(t, m, "a51aaaaaaaaaaaaaaaaa")
	b := setup(t, m, "b51bbbbbbbbbbbbbbbbb") // no policy: fenced
	listenIn(t, b, 4999)
	hostPort := hostServer(t)
	if err := m.SetPolicy(ctx, a.ID, mustPolicy(t, nil, nil, []string{in.b.String()})); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		reach := func(l *Link, to string) bool { return retry(3, func() error { return dialFrom(t, l, to) }) == nil }
		ga, gb := probe(true, func() error { return dialFrom(t, a, in.addr(in.a)) }), reach(a, in.addr(in.b))
		if !ga || gb {
			t.Errorf("%s: a's policy (all but %s) not enforced: reaches %s, %s = %v, %v\n%s", when, in.b, in.a, in.b, ga, gb, hostState(m))
		}
		if reach(b, in.addr(in.a)) {
			t.Errorf("%s: b without a policy reached %s", when, in.a)
		}
		for what, to := range map[string]string{
			"own host side": netip.AddrPortFrom(a.HostIP, hostPort).String(),
			"other sandbox": netip.AddrPortFrom(b.SandboxIP, 4999).String(),
		} {
			if reach(a, to) {
				t.Errorf("%s: a reached %s (%s)", when, what, to)
			}
		}
	}
	check("before")
	agent := hostToSandbox(t, a) // like the daemon's to an agent: kept

	if err := m.RemoveTable(); err != nil {
		t.Fatal(err)
	}
	c := setup(t, m, "c51ccccccccccccccccc") // failed with ENOENT before Heal
	if n := m.Rebuilds(); n != 1 {
		t.Errorf("rebuilds after Setup = %d, want 1", n)
	}
	check("after a Setup's rebuild")
	if err := m.SetPolicy(ctx, c.ID, mustPolicy(t, nil, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if eventually(func() error { return dialFrom(t, c, in.addr(in.a)) }) != nil {
		t.Error("new sandbox after the rebuild: its policy is not applied")
	}

	if err := m.RemoveTable(); err != nil {
		t.Fatal(err)
	}
	gap := openInGap(t, a) // the host is open to a while the table is gone
	if healed, err := m.Heal(ctx); !healed || err != nil {
		t.Fatalf("Heal = %v, %v; want true, nil", healed, err)
	}
	if healed, err := m.Heal(ctx); healed || err != nil {
		t.Fatalf("Heal of a present table = %v, %v; want false, nil", healed, err)
	}
	check("after Heal")
	if !echoes(agent) {
		t.Error("the host's connection to a sandbox was cut by the rebuild")
	}
	if echoes(gap) {
		t.Error("a connection a opened to the host while unfenced still passes after Heal")
	}

	// A teardown while the table is gone succeeds (its objects went with
	// the table) and the next rebuild does not bring them back.
	if err := m.RemoveTable(); err != nil {
		t.Fatal(err)
	}
	if err := m.Teardown(ctx, c.ID); err != nil {
		t.Fatalf("teardown while the table is gone: %v", err)
	}
	if healed, err := m.Heal(ctx); !healed || err != nil {
		t.Fatalf("Heal = %v, %v; want true, nil", healed, err)
	}
	check("after a teardown and Heal")
	for _, l := range []*Link{a, b, c} {
		if err := m.Teardown(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
		if left := residue(t, m, l); len(left) > 0 {
			t.Errorf("residue of %s: %v", l.ID, left)
		}
	}
}

// openInGap connects from l to an echo server on the host side of its
// link (closed to it while the table is there) and checks that it echoes.
func openInGap(t *testing.T, l *Link) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	egresstest.Serve(t, ln, func(_ context.Context, c net.Conn) { io.Copy(c, c); c.Close() })
	var c net.Conn
	to := netip.AddrPortFrom(l.HostIP, uint16(ln.Addr().(*net.TCPAddr).Port)).String()
	if err := inNet(t, l, func() (err error) { c, err = net.DialTimeout("tcp", to, time.Second); return err }); err != nil {
		t.Fatalf("the host is not open while the table is gone: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if !echoes(c) {
		t.Fatal("no echo while the table is gone")
	}
	return c
}

// echoes reports whether c's peer echoes a byte within 500 ms.
func echoes(c net.Conn) bool {
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	b := []byte{'x'}
	if _, err := c.Write(b); err != nil {
		return false
	}
	_, err := io.ReadFull(c, b)
	return err == nil
}

// hostToSandbox connects from the host to an echo server inside l.
func hostToSandbox(t *testing.T, l *Link) net.Conn {
	t.Helper()
	egresstest.Serve(t, listenerIn(t, l, 5001), func(_ context.Context, c net.Conn) { io.Copy(c, c); c.Close() })
	c, err := l.Dial(context.Background(), 5001)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !echoes(c) {
		t.Fatal("no echo from the sandbox")
	}
	return c
}
