package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTeardownLeavesNothing(t *testing.T) {
	m := testManager(t, testConfig(6))
	l := setup(t, m, "a6aaaaaaaaaaaaaaaaaa")
	for i := range 2 { // idempotent
		if err := m.Teardown(context.Background(), l.ID); err != nil {
			t.Fatalf("teardown %d: %v", i, err)
		}
	}
	if left := residue(t, m, l); len(left) > 0 {
		t.Fatalf("left after teardown: %v", left)
	}
	if _, ok := m.Lookup(l.ID); ok || len(m.List()) != 0 {
		t.Fatalf("still known: %v", m.List())
	}
	if err := m.Teardown(context.Background(), "neverexisted"); err != nil {
		t.Fatalf("teardown of an unknown id: %v", err)
	}
}

// TestRestart: a new Manager (a restarted daemon) adopts the live networks
// with their addresses and rules, hands out no address twice, and lists and
// reaps what a crash left half made.
func TestRestart(t *testing.T) {
	cfg := testConfig(7)
	m := testManager(t, cfg)
	a := setup(t, m, "a7aaaaaaaaaaaaaaaaaa")
	orphanNS := m.nsPath("orphan7netns")
	if _, err := newNamedNS(orphanNS); err != nil { // crash after the netns
		t.Fatal(err)
	}
	run(t, "nft", "add", "chain", "inet", cfg.Table, chainName(cfg.IfPrefix+"deadlink000"))
	run(t, "nft", "add", "element", "inet", cfg.Table, "addrs", `{ "`+cfg.IfPrefix+`deadlink000" . 10.231.7.99 }`)
	m2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := m2.Lookup(a.ID); !ok || *l != *a {
		t.Fatalf("restarted manager: %+v %v, want %+v", l, ok, a)
	}
	nft := run(t, "nft", "list", "table", "inet", cfg.Table)
	if !strings.Contains(nft, chainName(a.HostIf)) || !strings.Contains(nft, a.SandboxIP.String()) || strings.Contains(nft, "deadlink") {
		t.Fatalf("rules after restart:\n%s", nft)
	}
	if got := m2.List(); !slices.Equal(got, []string{a.ID, "orphan7netns"}) {
		t.Fatalf("List = %v", got)
	}
	b := setup(t, m2, "b7bbbbbbbbbbbbbbbbbb")
	if b.SandboxIP == a.SandboxIP || b.HostIP == a.HostIP {
		t.Fatal("restarted manager reused a live address")
	}
	for _, id := range m2.List() {
		if err := m2.Teardown(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []*Link{a, b} {
		if left := residue(t, m2, l); len(left) > 0 {
			t.Errorf("%s left %v", l.ID, left)
		}
	}
	if _, err := os.Stat(orphanNS); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan netns not reaped: %v", err)
	}
}

// TestSetupFailureCleansUp: when the rules cannot be installed (the table
// are in the way) or the pool is empty, Setup fails and leaves nothing behind.
func TestSetupFailureCleansUp(t *testing.T) {
	cfg := testConfig(8)
	cfg.Subnet = netip.MustParsePrefix("10.231.8.0/28") // 3 sandboxes
	m := testManager(t, cfg)
	var links []*Link
	for i := range 3 {
		links = append(links, setup(t, m, fmt.Sprintf("full%d", i)))
	}
	if _, err := m.Setup(context.Background(), "full3"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("4th setup in a /28: %v", err)
	}
	if err := m.Teardown(context.Background(), links[1].ID); err != nil {
		t.Fatal(err)
	}
	// A base chain in the way of the sandbox's own chain: its rules fail
	// (a jump to a base chain) while the table is there (a table that is
	// gone is rebuilt: TestHeal).
	own := chainName(m.ifName("norules"))
	run(t, "nft", "add", "chain", "inet", cfg.Table, own, "{ type filter hook forward priority 10 ; }")
	if _, err := m.Setup(context.Background(), "norules"); err == nil {
		t.Fatal("Setup succeeded without its rules")
	}
	run(t, "nft", "delete", "chain", "inet", cfg.Table, own)
	failed := &Link{ID: "norules", NetNSPath: m.nsPath("norules"), HostIf: m.ifName("norules"), HostIP: links[1].HostIP}
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	if left := residue(t, m, failed); len(left) > 0 {
		t.Fatalf("failed Setup left %v", left)
	}
	if l := setup(t, m, "again"); l.HostIP != links[1].HostIP {
		t.Fatalf("address of the failed Setup not released: got %s", l.HostIP)
	}
}

// TestRulesHoldWithoutManager: enforcement needs no goroutine; the rules
// are in the kernel after the Manager is gone.
func TestRulesHoldWithoutManager(t *testing.T) {
	cfg := testConfig(9)
	m := testManager(t, cfg)
	before := runtime.NumGoroutine()
	l := setup(t, m, "a9aaaaaaaaaaaaaaaaaa")
	time.Sleep(10 * time.Millisecond)
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("Setup left %d goroutines running", n-before)
	}
	m = nil
	runtime.GC()
	nft := run(t, "nft", "list", "table", "inet", cfg.Table)
	for _, want := range []string{`iifname "n09*" drop`, chainName(l.HostIf), l.SandboxIP.String()} {
		if !strings.Contains(nft, want) {
			t.Errorf("kernel table lacks %q:\n%s", want, nft)
		}
	}
	if err := dialFrom(t, l, netip.AddrPortFrom(l.HostIP, 22).String()); err == nil {
		t.Error("sandbox reached the host")
	}
}

// TestManySandboxes: 50 real networks set up concurrently get unique
// addresses and links, and all go away.
func TestManySandboxes(t *testing.T) {
	cfg := testConfig(10)
	cfg.Subnet = netip.MustParsePrefix("10.231.12.0/22")
	m := testManager(t, cfg)
	const n, workers = 50, 4
	links := make([]*Link, n)
	start := time.Now()
	parallel(n, workers, func(i int) {
		l, err := m.Setup(context.Background(), fmt.Sprintf("many%016d", i))
		if err != nil {
			t.Error(err)
		}
		links[i] = l
	})
	t.Logf("%d setups: %v (%v each, %d workers)", n, time.Since(start), time.Since(start)/n, workers)
	seen := map[netip.Addr]bool{}
	for _, l := range links {
		if l == nil || seen[l.SandboxIP] || seen[l.HostIP] {
			t.Fatalf("missing or duplicate address: %+v", l)
		}
		seen[l.SandboxIP], seen[l.HostIP] = true, true
	}
	start = time.Now()
	parallel(n, workers, func(i int) {
		if err := m.Teardown(context.Background(), links[i].ID); err != nil {
			t.Error(err)
		}
	})
	t.Logf("%d teardowns: %v", n, time.Since(start))
	for _, l := range links {
		if left := residue(t, m, l); len(left) > 0 {
			t.Fatalf("%s left %v", l.ID, left)
		}
	}
}

func parallel(n, workers int, fn func(i int)) {
	next := make(chan int)
	done := make(chan struct{})
	for range workers {
		go func() {
			for i := range next {
				fn(i)
			}
			done <- struct{}{}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	for range workers {
		<-done
	}
}
