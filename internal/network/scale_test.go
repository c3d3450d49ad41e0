package network

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// TestRestartAtScale: with 150 live sandboxes a restarted Manager adopts
// them all, restores all their rules after the table was lost, and removes
// the rules of links that vanished while it was down.
func TestRestartAtScale(t *testing.T) {
	cfg := testConfig(11)
	cfg.Subnet = netip.MustParsePrefix("10.231.28.0/22")
	m := testManager(t, cfg)
	const n = 150
	var links []*Link
	start := time.Now()
	for i := range n {
		links = append(links, setup(t, m, fmt.Sprintf("scale%d", i)))
	}
	t.Logf("%d sequential setups: %v", n, time.Since(start))
	chains := func() int {
		return strings.Count(run(t, "nft", "list", "table", "inet", cfg.Table), "chain sandbox-")
	}
	if err := m.RemoveTable(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	m2, err := New(cfg)
	t.Logf("restart with %d sandboxes: %v", n, time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if got, ok := m2.Lookup(l.ID); !ok || *got != *l {
			t.Fatalf("not adopted: %+v", l)
		}
	}
	if got := chains(); got != n {
		t.Fatalf("%d per-sandbox chains after restore, want %d", got, n)
	}
	for _, l := range links[:100] { // links vanish while the daemon is down
		link, err := netlink.LinkByName(l.HostIf)
		if err != nil {
			t.Fatal(err)
		}
		netlink.LinkDel(link)
	}
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	if got := chains(); got != n-100 {
		t.Fatalf("%d per-sandbox chains after GC, want %d", got, n-100)
	}
	table := run(t, "nft", "list", "table", "inet", cfg.Table)
	for _, l := range links[:100] { // every egress object too: sets, policy and guard chains
		if strings.Contains(table, l.HostIf) {
			t.Fatalf("objects of vanished link %s left after GC:\n%s", l.HostIf, table)
		}
	}
	for _, id := range m2.List() {
		if err := m2.Teardown(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if got := chains(); got != 0 {
		t.Fatalf("%d per-sandbox chains after teardown", got)
	}
}
