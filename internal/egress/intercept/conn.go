package intercept

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// prefixConn is a conn whose first reads return the bytes the guard
// already peeked.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite passes a half-close on when the underlying conn has one.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// oneConnListener hands one conn to an http.Server, then blocks Accept
// until that conn is closed or hijacked (done) or ctx ends, so Serve
// returns exactly when the connection's life as HTTP is over.
type oneConnListener struct {
	ctx  context.Context
	conn net.Conn
	once sync.Once
	done chan struct{}
	gone sync.Once
}

func newOneConnListener(ctx context.Context, c net.Conn) *oneConnListener {
	return &oneConnListener{ctx: ctx, conn: c, done: make(chan struct{})}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.conn })
	if c != nil {
		return c, nil
	}
	select {
	case <-l.done:
	case <-l.ctx.Done():
	}
	return nil, net.ErrClosed
}

// connState is the http.Server's ConnState hook.
func (l *oneConnListener) connState(_ net.Conn, s http.ConnState) {
	if s == http.StateClosed || s == http.StateHijacked {
		l.gone.Do(func() { close(l.done) })
	}
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }
