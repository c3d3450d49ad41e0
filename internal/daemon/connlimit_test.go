package daemon

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/cluster"
)

// TestConnLimit: idle keep-alive connections up to the limit are held; the
// next connection is served only once one of them closes (it waited in the
// kernel's queue, holding no descriptor of the daemon); a closed listener
// returns from a waiting Accept.
func TestConnLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := newConnLimit(4, 0)
	lln := lim.wrap(ln)
	srv := newHTTPServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), defaultLimits)
	go srv.Serve(lln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	var idle []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := ask(c, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c) // kept alive, idle
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if err := ask(extra, 300*time.Millisecond); err == nil {
		t.Fatal("a connection past the limit was served")
	}
	idle[0].Close()
	if err := ask(extra, 2*time.Second); err != nil {
		t.Fatalf("waiting connection not served after one closed: %v", err)
	}
	if len(lim.sem) != 4 {
		t.Fatalf("%d slots held, want 4", len(lim.sem))
	}
}

// ask sends a request on c and reads the answer within wait.
func ask(c net.Conn, wait time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		return err
	}
	_, err := http.ReadResponse(bufio.NewReader(c), nil)
	return err
}

// TestConnLimitPerAddr: one remote address holds at most its share; its
// next connection is closed at once (not queued), while loopback is not
// counted and the address gets a slot back when one of its connections
// closes.
func TestConnLimitPerAddr(t *testing.T) {
	host := nonLoopback(t)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := newConnLimit(10, 2)
	srv := newHTTPServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), defaultLimits)
	go srv.Serve(lim.wrap(ln))
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	dial := func(ip string) net.Conn {
		c, err := net.Dial("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var held []net.Conn
	for range 2 {
		c := dial(host)
		if err := ask(c, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	start := time.Now()
	if err := ask(dial(host), 2*time.Second); err == nil || time.Since(start) > time.Second {
		t.Fatalf("a third connection from %s: %v after %v, want closed at once", host, err, time.Since(start))
	}
	for range 4 {
		if err := ask(dial("127.0.0.1"), 2*time.Second); err != nil {
			t.Fatalf("loopback: %v", err)
		}
	}
	held[0].Close()
	deadline := time.Now().Add(2 * time.Second)
	for ask(dial(host), time.Second) != nil {
		if time.Now().After(deadline) {
			t.Fatal("no slot back for the address after one of its connections closed")
		}
	}
}

// nonLoopback is an IPv4 address of this host that is not loopback.
func nonLoopback(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address")
	return ""
}

// TestConnLimitIPv6Prefix: IPv6 clients are counted by /64, the least a
// host is given (one host holds 2^64 addresses: counted by address, it
// could take the whole bound), IPv4 ones by address.
func TestConnLimitIPv6Prefix(t *testing.T) {
	lim := newConnLimit(100, 2)
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"2001:db8:1:2::1", true},
		{"2001:db8:1:2::2", true},
		{"2001:db8:1:2:ffff::3", false}, // the same /64, full
		{"2001:db8:1:3::1", true},       // the next /64
		{"192.0.2.1", true},
		{"192.0.2.2", true},
		{"192.0.2.3", true},
		{"192.0.2.1", true},
		{"192.0.2.1", false},
	} {
		if got := lim.take(lim.keyOf(netip.MustParseAddr(tc.addr))); got != tc.ok {
			t.Errorf("take(%s) = %v, want %v", tc.addr, got, tc.ok)
		}
	}
	lim.give(lim.keyOf(netip.MustParseAddr("2001:db8:1:2::2")))
	if !lim.take(lim.keyOf(netip.MustParseAddr("2001:db8:1:2::9"))) {
		t.Error("no slot back for the /64 after one of its connections closed")
	}
}

// TestConnLimitFrontExempt: on a node with the cluster secret, a
// connection whose request the front signed stops counting under its
// address (the front speaks for every client), so the front keeps more
// connections open than --max-conns-per-addr; unsigned ones from the same
// address are still bounded. Before, the front's third connection here was
// closed at once.
func TestConnLimitFrontExempt(t *testing.T) {
	host := nonLoopback(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("a-cluster-secret-of-at-least-32-bytes!!"), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := cluster.LoadSigner(secret)
	if err != nil {
		t.Fatal(err)
	}
	cf := &clusterFlags{signer: signer, nodeID: "n1"}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := newConnLimit(100, 2)
	srv := newHTTPServer(cf.guard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), defaultLimits)
	go srv.Serve(lim.wrap(ln))
	t.Cleanup(func() { srv.Close() })
	addr := net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	askSigned := func(c net.Conn) error {
		req, _ := http.NewRequest("GET", "http://"+addr+"/sandboxes", nil)
		signer.Sign(req, "n1")
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if err := req.Write(c); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), req)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		return err
	}
	for i := range 6 { // the front's connections, each kept open
		if err := askSigned(dial()); err != nil {
			t.Fatalf("the front's connection %d: %v", i, err)
		}
	}
	for range 2 { // unsigned ones (401) still count
		if err := ask(dial(), 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := ask(dial(), 2*time.Second); err == nil {
		t.Fatal("a third unsigned connection from the address was served, want closed at once")
	}
}

// TestGuardTakesSignatureOff: a node's guard passes a request the front
// signed on without the signature, so nothing behind it (a sandbox's
// server, for sandbox traffic) can read and replay it; unsigned requests
// are 401. Before, the handler saw the header as the front sent it.
func TestGuardTakesSignatureOff(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("a-cluster-secret-of-at-least-32-bytes!!"), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := cluster.LoadSigner(secret)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	h := (&clusterFlags{signer: signer, nodeID: "n1"}).guard(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get(cluster.AuthHeader)+r.Header.Get(cluster.ClientHeader), r.RemoteAddr)
	}))
	req := httptest.NewRequest("GET", "/sandboxes/x", nil)
	req.RemoteAddr = "198.51.100.7:4242" // the client, as the front received it
	signer.Sign(req, "n1")
	req.RemoteAddr = "192.0.2.1:5555" // the front, as the node receives it
	h.ServeHTTP(httptest.NewRecorder(), req)
	if len(seen) != 2 || seen[0] != "" {
		t.Fatalf("the handler behind the guard saw the signature or client header %q", seen)
	}
	if seen[1] != "198.51.100.7:0" {
		t.Fatalf("the handler saw remote address %q, want the client's the front signed", seen[1])
	}
	seen = nil
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/sandboxes/x", nil))
	if w.Code != http.StatusUnauthorized || len(seen) != 0 {
		t.Fatalf("unsigned: %d, handler calls %d", w.Code, len(seen))
	}
}

// TestFrontListenerBounded: the API front's listener takes the daemon's one
// client connection bound (a node playing both roles shares it with its own
// listeners). Before, it was not wrapped at all (integration
// TestClusterFrontConnsBounded: EMFILE under one address's idle connections).
func TestFrontListenerBounded(t *testing.T) {
	f := &Config{maxConnsPerAddr: 2}
	b, err := frontServer(nil, f, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.ln.Close()
	ll, ok := b.ln.(*limitedListener)
	if !ok || ll.lim != f.clientConns() {
		t.Fatalf("the front's listener is %T, not bounded by the daemon's client connection limit", b.ln)
	}
}
