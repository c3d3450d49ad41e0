package network

import (
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAntiSpoofing sends UDP from inside a sandbox with its own and with
// forged source addresses; a counting chain running after sbx's prerouting
// chain must see only the packets from the sandbox's own address.
func TestAntiSpoofing(t *testing.T) {
	m := testManager(t, testConfig(5))
	a := setup(t, m, "a5aaaaaaaaaaaaaaaaaa")
	b := setup(t, m, "b5bbbbbbbbbbbbbbbbbb")
	const table = "sbxspooftest05"
	run(t, "nft", "add", "table", "inet", table)
	t.Cleanup(func() { run(t, "nft", "delete", "table", "inet", table) })
	run(t, "nft", "add", "chain", "inet", table, "pre", "{ type filter hook prerouting priority -150; }")
	sources := map[string]bool{a.SandboxIP.String(): true, b.SandboxIP.String(): false, "198.51.100.7": false, "10.231.5.250": false}
	ns := strings.TrimPrefix(a.NetNSPath, "/run/netns/")
	for src := range sources {
		run(t, "nft", "add", "rule", "inet", table, "pre", "iifname", a.HostIf, "ip", "saddr", src, "udp", "dport", "9999", "counter")
		if src != a.SandboxIP.String() {
			run(t, "ip", "netns", "exec", ns, "ip", "addr", "add", src+"/32", "dev", "eth0")
		}
	}
	// The own address first: it resolves the gateway's MAC (the host,
	// strict on reverse paths, ignores ARP requests from forged senders).
	send(t, a, a.SandboxIP.String())
	for src := range sources {
		send(t, a, src)
	}
	got := counters(t, run(t, "nft", "list", "chain", "inet", table, "pre"))
	for src, pass := range sources {
		if (got[src] > 0) != pass {
			t.Errorf("packets from %s seen after sbx prerouting: %d, want passed=%v", src, got[src], pass)
		}
	}
	if err := m.RemoveTable(); err != nil { // control: the forged packets do leave
		t.Fatal(err)
	}
	for src := range sources {
		send(t, a, src)
	}
	for src, n := range counters(t, run(t, "nft", "list", "chain", "inet", table, "pre")) {
		if n == 0 {
			t.Errorf("control: no packet from %s arrived without the sbx table", src)
		}
	}
}

func send(t *testing.T, l *Link, src string) {
	if err := inNet(t, l, func() error { return sendUDP(src) }); err != nil {
		t.Fatalf("send from %s: %v", src, err)
	}
	time.Sleep(50 * time.Millisecond)
}

// sendUDP sends a few datagrams from src to 198.51.100.1:9999 (routed via
// the sandbox's gateway).
func sendUDP(src string) error {
	c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.ParseIP(src)}, &net.UDPAddr{IP: net.ParseIP("198.51.100.1"), Port: 9999})
	if err != nil {
		return err
	}
	defer c.Close()
	for range 3 {
		if _, err := c.Write([]byte("x")); err != nil {
			return err
		}
	}
	return nil
}

var counterRE = regexp.MustCompile(`ip saddr (\S+) udp dport 9999 counter packets (\d+)`)

func counters(t *testing.T, listing string) map[string]int {
	out := map[string]int{}
	for _, m := range counterRE.FindAllStringSubmatch(listing, -1) {
		out[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(out) == 0 {
		t.Fatalf("no counters in %q", listing)
	}
	return out
}
