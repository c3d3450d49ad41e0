package network

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
)

// TestForeignDNATIsNoDoor: the input chain lets a sandbox's redirected
// connections in only to the daemon's own ports. Another program's DNAT to
// this host (Docker's published ports, a NodePort; here a table of the
// test's own redirecting TCP 7777 to a host server) must not open the host
// to the sandbox; the daemon's own redirect (the guard) still works.
func TestForeignDNATIsNoDoor(t *testing.T) {
	m, in, a := withGuard(t, 62)
	if err := m.SetPolicy(context.Background(), a.ID, mustPolicy(t, nil, nil, nil)); err != nil {
		t.Fatal(err)
	}
	hostPort := hostServer(t)
	table := "sbxtestdnat62"
	run(t, "nft", "add", "table", "ip", table)
	t.Cleanup(func() { run(t, "nft", "delete", "table", "ip", table) })
	run(t, "nft", "add", "chain", "ip", table, "pre", "{ type nat hook prerouting priority dstnat; }")
	run(t, "nft", "add", "rule", "ip", table, "pre", "tcp", "dport", "7777", "redirect", "to", fmt.Sprintf(":%d", hostPort))
	reach := func(to string) bool { return retry(3, func() error { return dialFrom(t, a, to) }) == nil }
	for what, to := range map[string]string{
		"own host side":  netip.AddrPortFrom(a.HostIP, 7777).String(),
		"uplink address": netip.AddrPortFrom(in.host, 7777).String(),
	} {
		if reach(to) {
			t.Errorf("sandbox reached the host through a foreign DNAT (%s, %s)", what, to)
		}
	}
	if err := m.SetPolicy(context.Background(), a.ID, mustPolicy(t, nil, []string{"example.com"}, nil)); err != nil {
		t.Fatal(err)
	}
	if err := m.AddResolved(a.ID, []netip.Addr{in.a}, 60e9); err != nil {
		t.Fatal(err)
	}
	if !probe(true, func() error { return dialFrom(t, a, netip.AddrPortFrom(in.a, 443).String()) }) {
		t.Error("the daemon's own redirect (the guard) no longer lets the sandbox in")
	}
}
