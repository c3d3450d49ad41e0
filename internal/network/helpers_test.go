package network

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/sbx-dev/sbx/internal/egress/egresstest"
)

// testConfig gives each test its own prefix, table and subnet (n is 1-99),
// so tests never see each other's or a running daemon's sandboxes.
func testConfig(n int) Config {
	return Config{
		Subnet:   netip.MustParsePrefix(fmt.Sprintf("10.231.%d.0/24", n)),
		IfPrefix: fmt.Sprintf("n%02d", n),
		Table:    fmt.Sprintf("sbxtest%02d", n),
	}
}

// testManager returns a Manager on cfg; every network it knows and its
// table are removed when the test ends.
func testManager(t testing.TB, cfg Config) *Manager {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m2, err := New(cfg) // a fresh view: finds whatever the test left
		if err != nil {
			t.Errorf("cleanup: %v", err)
			m2 = m
		}
		for _, id := range m2.List() {
			if err := m2.Teardown(context.Background(), id); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		m2.RemoveTable()
	})
	return m
}

func setup(t testing.TB, m *Manager, id string) *Link {
	t.Helper()
	l, err := m.Setup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// inNet runs fn inside l's netns.
func inNet(t testing.TB, l *Link, fn func() error) error {
	t.Helper()
	ns, err := netns.GetFromPath(l.NetNSPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	return inNS(ns, fn)
}

// serve accepts TCP connections on ln, writing "hi" to each, until cleanup.
func serve(t testing.TB, ln net.Listener) {
	egresstest.Serve(t, ln, greet)
}

// greet writes the test servers' greeting to c and closes it.
func greet(_ context.Context, c net.Conn) {
	c.Write([]byte("hi"))
	c.Close()
}

// hostServer serves "hi" on the host's wildcard address (what a sandbox
// must not reach through any host address) and returns its port.
func hostServer(t testing.TB) uint16 {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, ln)
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// listenIn starts a TCP server inside l's netns on 0.0.0.0:port.
func listenIn(t testing.TB, l *Link, port int) {
	t.Helper()
	serve(t, listenerIn(t, l, port))
}

// listenerIn listens inside l's netns on 0.0.0.0:port until the test ends.
func listenerIn(t testing.TB, l *Link, port int) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := inNet(t, l, func() (err error) {
		ln, err = net.Listen("tcp", "0.0.0.0:"+strconv.Itoa(port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dialFrom connects from inside l's netns to addr and reads the greeting.
func dialFrom(t testing.TB, l *Link, addr string) error {
	return inNet(t, l, func() error { return dialRead(addr) })
}

func dialRead(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	b := make([]byte, 2)
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	if string(b) != "hi" { // the test's servers greet so; anything else answered
		return fmt.Errorf("%s answered %q, not a test server", addr, b)
	}
	return nil
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// residue lists what is left on the host of l.
func residue(t testing.TB, m *Manager, l *Link) []string {
	var left []string
	if _, err := os.Stat(l.NetNSPath); err == nil {
		left = append(left, "netns file")
	}
	if strings.Contains(run(t, "ip", "-o", "link"), l.HostIf) {
		left = append(left, "link")
	}
	if strings.Contains(run(t, "ip", "-4", "route"), l.HostIP.String()) {
		left = append(left, "route")
	}
	if strings.Contains(run(t, "nft", "list", "table", "inet", m.cfg.Table), l.HostIf) {
		left = append(left, "nft objects")
	}
	return left
}

// hostState is what a failed reachability check prints: the table, the
// links and routes of the host, all of nftables' tables.
func hostState(m *Manager) string {
	var b strings.Builder
	for _, args := range [][]string{
		{"nft", "list", "table", "inet", m.cfg.Table},
		{"nft", "list", "tables"},
		{"ip", "-o", "-4", "addr"},
		{"ip", "route"},
		{"sysctl", "net.ipv4.ip_forward"},
	} {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		fmt.Fprintf(&b, "$ %s (%v)\n%s\n", strings.Join(args, " "), err, out)
	}
	return b.String()
}
