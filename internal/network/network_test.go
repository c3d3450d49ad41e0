package network

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

func testManager(t *testing.T) *Manager {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	m, err := New(Config{Subnet: netip.MustParsePrefix("10.203.0.0/24"), IfPrefix: "sbt", Table: "sbxtest"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.RemoveTable() })
	return m
}

func setup(t *testing.T, m *Manager, id string) *Link {
	t.Helper()
	l, err := m.Setup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Teardown(context.Background(), id) })
	return l
}

// listenIn starts a TCP echo-less server inside l's netns on port.
func listenIn(t *testing.T, l *Link, port int) {
	t.Helper()
	ns, err := netns.GetFromPath(l.NetNSPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var ln net.Listener
	if err := inNS(ns, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort("0.0.0.0", itoa(port)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
}

// dialFrom dials addr from inside l's netns.
func dialFrom(t *testing.T, l *Link, addr string) error {
	ns, err := netns.GetFromPath(l.NetNSPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	return inNS(ns, func() error {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestSetupReachabilityAndIsolation(t *testing.T) {
	m := testManager(t)
	a := setup(t, m, "aaaaaaaaaaaaaaaaaaaa")
	b := setup(t, m, "bbbbbbbbbbbbbbbbbbbb")
	if a.SandboxIP == b.SandboxIP || a.HostIP == b.HostIP {
		t.Fatal("duplicate addresses")
	}
	listenIn(t, a, 4999)
	listenIn(t, b, 4999)
	c, err := a.Dial(context.Background(), 4999)
	if err != nil {
		t.Fatalf("host → sandbox: %v", err)
	}
	c.Close()
	host, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	hostPort := host.Addr().(*net.TCPAddr).Port
	for name, addr := range map[string]string{
		"host side of own link":  netip.AddrPortFrom(a.HostIP, uint16(hostPort)).String(),
		"other sandbox":          netip.AddrPortFrom(b.SandboxIP, 4999).String(),
		"other link's host side": netip.AddrPortFrom(b.HostIP, uint16(hostPort)).String(),
		"outside":                "1.1.1.1:80",
	} {
		if err := dialFrom(t, a, addr); err == nil {
			t.Errorf("sandbox reached %s (%s)", name, addr)
		}
	}
	out, _ := exec.Command("ip", "netns", "exec", "sbx-"+a.ID, "cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6").Output()
	if strings.TrimSpace(string(out)) != "1" {
		t.Errorf("IPv6 not disabled in the netns: %q", out)
	}
}

func TestTeardownAndRestart(t *testing.T) {
	m := testManager(t)
	a := setup(t, m, "cccccccccccccccccccc")
	m2, err := New(Config{Subnet: netip.MustParsePrefix("10.203.0.0/24"), IfPrefix: "sbt", Table: "sbxtest"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := m2.Lookup(a.ID); !ok || l.SandboxIP != a.SandboxIP {
		t.Fatalf("restarted manager lost the link: %+v %v", l, ok)
	}
	b, err := m2.Setup(context.Background(), "dddddddddddddddddddd")
	if err != nil {
		t.Fatal(err)
	}
	if b.SandboxIP == a.SandboxIP {
		t.Fatal("restarted manager reused a live address")
	}
	for _, id := range []string{a.ID, b.ID} {
		if err := m2.Teardown(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if err := m2.Teardown(context.Background(), id); err != nil {
			t.Fatalf("second teardown: %v", err)
		}
		if _, err := os.Stat("/run/netns/sbx-" + id); !os.IsNotExist(err) {
			t.Errorf("netns file left for %s", id)
		}
		if out, _ := exec.Command("ip", "-o", "link").Output(); strings.Contains(string(out), "sbt"+id[:12]) {
			t.Errorf("link left for %s", id)
		}
	}
	if len(m2.List()) != 0 {
		t.Fatalf("List after teardown = %v", m2.List())
	}
}

func TestPoolUnique(t *testing.T) {
	m := &Manager{cfg: Config{Subnet: netip.MustParsePrefix("10.200.0.0/16")}, used: map[int]string{}}
	seen := map[netip.Addr]bool{}
	for i := 0; i < 1000; i++ {
		n, err := m.allocateLocked(string(rune(i)))
		if err != nil {
			t.Fatal(err)
		}
		h, s := m.addrs(n)
		if seen[h] || seen[s] || !m.cfg.Subnet.Contains(s) {
			t.Fatalf("duplicate or out-of-pool address at %d: %s %s", i, h, s)
		}
		seen[h], seen[s] = true, true
	}
	if m.slots() < 16000 {
		t.Fatalf("a /16 gives only %d sandboxes", m.slots())
	}
}

func BenchmarkSetupTeardown(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	m, err := New(Config{Subnet: netip.MustParsePrefix("10.204.0.0/24"), IfPrefix: "sbb", Table: "sbxbench"})
	if err != nil {
		b.Fatal(err)
	}
	defer m.RemoveTable()
	for i := 0; i < b.N; i++ {
		if _, err := m.Setup(context.Background(), "benchbenchbenchbench"); err != nil {
			b.Fatal(err)
		}
		if err := m.Teardown(context.Background(), "benchbenchbenchbench"); err != nil {
			b.Fatal(err)
		}
	}
}
