// Package egresstest holds what tests of the egress path share: TCP
// servers standing in for upstreams, proxies and the host.
package egresstest

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Serve accepts connections on ln until the test ends (egress.ServeConns:
// the daemon's own accept loop), handling each in its own goroutine; ctx
// ends with the test. It returns ln's address.
func Serve(tb testing.TB, ln net.Listener, handle func(ctx context.Context, c net.Conn)) string {
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(func() { cancel(); ln.Close() })
	go func() { _ = egress.ServeConns(ctx, ln, "test server", slog.New(slog.DiscardHandler), handle) }()
	return ln.Addr().String()
}

// Listen listens on network ("tcp", "tcp4") and address addr
// ("127.0.0.1:0", "0.0.0.0:0") and serves it as Serve does.
func Listen(tb testing.TB, network, addr string, handle func(ctx context.Context, c net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		tb.Fatal(err)
	}
	return Serve(tb, ln, handle)
}
