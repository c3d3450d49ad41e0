package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/egresstest"
)

// block is one Guard.Blocked report.
type block struct{ sandbox, dst, reason string }

// guardEnv is a Guard on loopback whose original destination is injected
// (dst for every connection) and whose dials to dst go to upstream, a real
// server on loopback: what an nft redirect plus the internet would do.
type guardEnv struct {
	g       *Guard
	addr    string     // where clients connect (the redirect target)
	blocked chan block // Blocked reports
	dials   atomic.Int32
	served  chan error // Serve's result
	cancel  context.CancelFunc
}

type guardSetup struct {
	policy   egress.Policy
	dst      string              // original destination, "ip:port"
	upstream string              // real server dials to dst reach
	resolved *egress.Resolutions // nil: an empty one
	unknown  bool                // Lookup does not know the source
	mod      func(*Guard)
}

func startGuard(t testing.TB, s guardSetup) *guardEnv {
	t.Helper()
	dst := netip.MustParseAddrPort(s.dst)
	if s.resolved == nil {
		s.resolved = &egress.Resolutions{}
	}
	e := &guardEnv{blocked: make(chan block, 64), served: make(chan error, 1)}
	e.g = &Guard{
		Lookup: func(src netip.Addr) (string, egress.Policy, bool) {
			return "sb1", s.policy, !s.unknown && src == netip.MustParseAddr("127.0.0.1")
		},
		Resolved: s.resolved.Has,
		Blocked:  func(sb, d, r string) { e.blocked <- block{sb, d, r} },
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			e.dials.Add(1)
			if addr != dst.String() || s.upstream == "" {
				return nil, fmt.Errorf("test dialer: no route to %s", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, s.upstream)
		},
		Log:     discardLog(),
		origDst: func(net.Conn) (netip.AddrPort, error) { return dst, nil },
	}
	if s.mod != nil {
		s.mod(e.g)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.served <- e.g.Serve(ctx, ln) }()
	t.Cleanup(func() { e.stop(t) })
	return e
}

// stop cancels Serve and waits for it: Serve returns only once every
// connection goroutine has, so a return proves none leaked.
func (e *guardEnv) stop(t testing.TB) {
	t.Helper()
	e.cancel()
	select {
	case err, ok := <-e.served:
		if ok && err != nil {
			t.Errorf("Serve: %v", err)
		}
		if ok {
			close(e.served)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return 10 s after its context ended")
	}
}

func (e *guardEnv) dial(t *testing.T) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp4", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// wantBlocked waits for one Blocked report with reason.
func (e *guardEnv) wantBlocked(t *testing.T, reason string) block {
	t.Helper()
	select {
	case b := <-e.blocked:
		if b.reason != reason {
			t.Fatalf("blocked for %q, want %q (%+v)", b.reason, reason, b)
		}
		return b
	case <-time.After(15 * time.Second):
		t.Fatalf("no block reported, want %q", reason)
	}
	return block{}
}

// wantClosed checks the guard closed c without a byte of answer.
func wantClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	n, err := io.Copy(io.Discard, c)
	var ne net.Error
	if n != 0 || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection not closed by the guard: read %d bytes, %v", n, err)
	}
}

// sumServer is a plain TCP server that reads everything a client sends
// until EOF (the client's half-close) and answers with its length and
// checksum, then closes.
func sumServer(t testing.TB) string {
	t.Helper()
	return egresstest.Listen(t, "tcp4", "127.0.0.1:0", func(_ context.Context, c net.Conn) {
		defer c.Close()
		n, sum := checksum(c)
		fmt.Fprintf(c, "%d %x", n, sum)
	})
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}
