package network

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestHealFlushedTable: `nft flush table` keeps the table (its chains and
// sets) and removes every rule, so every sandbox link is unfenced: Heal
// detects it (the marker rule is gone) and rebuilds, and a sandbox under a
// domain allow-list reaches the addresses its DNS filter had resolved
// again, with the rest of their lifetimes, without resolving again; what
// was not resolved stays closed, and a fenced sandbox stays fenced.
func TestHealFlushedTable(t *testing.T) {
	ctx := context.Background()
	m := testManager(t, testConfig(52))
	in := newInternet(t, 52)
	a := setup(t, m, "a52aaaaaaaaaaaaaaaaa")
	b := setup(t, m, "b52bbbbbbbbbbbbbbbbb") // no policy: fenced
	if err := m.SetPolicy(ctx, a.ID, mustPolicy(t, nil, []string{"example.com"}, nil)); err != nil {
		t.Fatal(err)
	}
	if err := m.AddResolved(a.ID, []netip.Addr{in.a}, 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	reach := func(l *Link, to netip.Addr) bool {
		return retry(3, func() error { return dialFrom(t, l, in.addr(to)) }) == nil
	}
	check := func(when string) {
		t.Helper()
		ga, gb := probe(true, func() error { return dialFrom(t, a, in.addr(in.a)) }), reach(a, in.b)
		if !ga || gb {
			t.Errorf("%s: a's allow-list (resolved %s only) not enforced: reaches %s, %s = %v, %v\n%s", when, in.a, in.a, in.b, ga, gb, hostState(m))
		}
		if reach(b, in.a) {
			t.Errorf("%s: b without a policy reached %s", when, in.a)
		}
	}
	check("before")
	run(t, "nft", "flush", "table", "inet", m.cfg.Table)
	gap := openInGap(t, b) // the host is open to b while the rules are gone
	if healed, err := m.Heal(ctx); !healed || err != nil {
		t.Fatalf("Heal of a flushed table = %v, %v; want true, nil", healed, err)
	}
	if healed, err := m.Heal(ctx); healed || err != nil {
		t.Fatalf("Heal of an intact table = %v, %v; want false, nil", healed, err)
	}
	check("after Heal")
	if echoes(gap) {
		t.Error("a connection b opened to the host while unfenced still passes after Heal")
	}
	set := run(t, "nft", "list", "set", "inet", m.cfg.Table, "dns-"+a.HostIf)
	if !strings.Contains(set, in.a.String()) || !strings.Contains(set, "expires 29m") {
		t.Errorf("resolved address not restored with the rest of its lifetime:\n%s", set)
	}
	// A new policy forgets the resolutions: a later rebuild does not bring them back.
	if err := m.SetPolicy(ctx, a.ID, mustPolicy(t, nil, []string{"example.org"}, nil)); err != nil {
		t.Fatal(err)
	}
	if err := m.RemoveTable(); err != nil {
		t.Fatal(err)
	}
	if healed, err := m.Heal(ctx); !healed || err != nil {
		t.Fatalf("Heal of a removed table = %v, %v; want true, nil", healed, err)
	}
	if reach(a, in.a) {
		t.Error("an address resolved under an older policy came back with a rebuild")
	}
	for _, l := range []*Link{a, b} {
		if err := m.Teardown(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
		if left := residue(t, m, l); len(left) > 0 {
			t.Errorf("residue of %s: %v", l.ID, left)
		}
	}
}
