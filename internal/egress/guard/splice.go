package guard

import (
	"context"
	"io"
	"net"
	"net/netip"

	"github.com/sbx-dev/sbx/internal/egress"
)

// forward dials dst, replays peeked to it, then copies both ways until both
// directions are done or ctx ends; it closes the upstream connection (the
// caller closes c).
func (g *Guard) forward(ctx context.Context, c net.Conn, sb, name string, dst netip.AddrPort, peeked []byte) {
	dctx, cancel := context.WithTimeout(ctx, egress.UpstreamDialTimeout)
	up, err := g.dial(dctx, dst.String())
	cancel()
	if err != nil {
		g.log().Info("egress guard: dial", "sandbox", sb, "name", name, "dst", dst, "err", err)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { _ = up.Close() })
	defer stop()
	if _, err := up.Write(peeked); err != nil {
		return
	}
	splice(c, up)
}

func (g *Guard) dial(ctx context.Context, addr string) (net.Conn, error) {
	if g.Dial != nil {
		return g.Dial(ctx, "tcp", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// splice copies a→b and b→a. A direction that ends cleanly (EOF) is passed
// on as a half-close (CloseWrite), so the other direction goes on; one that
// fails closes both connections, so the other direction cannot hang.
func splice(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyHalf(b, a)
	}()
	copyHalf(a, b)
	<-done
}

// copyHalf copies src to dst and then half-closes dst (or closes both).
func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		if cw.CloseWrite() == nil {
			return
		}
	}
	_ = dst.Close()
	_ = src.Close()
}
