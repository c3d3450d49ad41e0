package daemon

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"sync"

	"github.com/sbx-dev/sbx/internal/fdlimit"
)

// connLimit bounds the client connections the daemon's listeners hold at
// once, together. Past it, new connections wait in the kernel's accept
// queue, holding none of the daemon's descriptors, until one closes. Before,
// anyone reaching the port could hold 20,000 idle keep-alive connections
// (2 min each, then open them again): the daemon hit its descriptor limit
// and could neither accept for anyone nor reap sandboxes (EMFILE).
//
// One remote address may hold at most perAddr of them (loopback is not
// counted: a reverse proxy on the host speaks for everyone); its next
// connection is closed at once, so that one client cannot take the whole
// bound and make everyone else's connections wait. An IPv6 address counts
// as its /64 (keyOf): one host is given at least that many addresses.
type connLimit struct {
	sem     chan struct{}
	perAddr int
	mu      sync.Mutex
	byAddr  map[netip.Prefix]int // open connections per keyOf; mu
}

// newConnLimit allows n connections at once, perAddr of them (0: no bound)
// from one non-loopback address.
func newConnLimit(n, perAddr int) *connLimit {
	return &connLimit{sem: make(chan struct{}, n), perAddr: perAddr, byAddr: map[netip.Prefix]int{}}
}

// keyOf is what a connection from a is counted under: an IPv4 address
// itself, an IPv6 address's /64; the zero Prefix (never counted) for
// loopback, a connection without an address, or no per-address bound.
func (c *connLimit) keyOf(a netip.Addr) netip.Prefix {
	if c.perAddr <= 0 || !a.IsValid() || a.IsLoopback() {
		return netip.Prefix{}
	}
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.WithZone("").Prefix(bits)
	return p
}

// take counts a connection under k; false (nothing counted) if k holds
// perAddr already.
func (c *connLimit) take(k netip.Prefix) bool {
	if !k.IsValid() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byAddr[k] >= c.perAddr {
		return false
	}
	c.byAddr[k]++
	return true
}

// give returns what take counted under k.
func (c *connLimit) give(k netip.Prefix) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.giveLocked(k)
}

// giveLocked is give with c.mu held.
func (c *connLimit) giveLocked(k netip.Prefix) {
	if !k.IsValid() {
		return
	}
	if c.byAddr[k]--; c.byAddr[k] <= 0 {
		delete(c.byAddr, k)
	}
}

// remoteAddr is c's remote IP (unmapped), invalid if it has none.
func remoteAddr(c net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// connKey is the context key of a request's connection (withConn).
type connKey struct{}

// withConn is the server's ConnContext: it keeps each request's
// connection reachable from its context (exemptFromAddr).
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// exemptFromAddr stops counting the connection of a request with ctx under
// its remote address: a node calls it for requests its cluster front signed.
// The front speaks for every client, so counted per address its connections
// to a node were bounded by --max-conns-per-addr all together, and one
// tenant holding that many requests through the front (2,500 by default; its
// own proxy bound is as many) made the node close the front's next
// connection at once, every other tenant's traffic to that node included.
func exemptFromAddr(ctx context.Context) {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if lc, ok := c.(*limitedConn); ok {
		lc.exempt()
	}
}

// defaultConnLimit is half the process's descriptor limit: the rest stays
// for the sandboxes' upstream connections (the proxy holds at most a
// quarter, the egress guard and tunnel an eighth: egressLimits), the
// database, the runtimes and reaping.
func defaultConnLimit() int {
	return max(fdlimit.Descriptors()/2, 64)
}

// wrap returns ln accepting only while the limit has room.
func (c *connLimit) wrap(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, lim: c, done: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	lim   *connLimit
	done  chan struct{} // closed by Close: a waiting Accept returns
	close sync.Once
}

// Accept waits for a slot, then returns the next connection whose address
// has room; it closes those that have none.
func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.lim.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.lim.sem
			return nil, err
		}
		if k := l.lim.keyOf(remoteAddr(c)); l.lim.take(k) {
			return &limitedConn{Conn: c, lim: l.lim, key: k}, nil
		}
		c.Close()
	}
}

func (l *limitedListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back once, at its first Close.
type limitedConn struct {
	net.Conn
	lim  *connLimit
	key  netip.Prefix // what take counted it under; zero once exempt (lim.mu)
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.exempt()
		<-c.lim.sem
	})
	return err
}

// exempt stops counting c under its remote address; it stays in the
// listeners' total until it closes.
func (c *limitedConn) exempt() {
	c.lim.mu.Lock()
	defer c.lim.mu.Unlock()
	c.lim.giveLocked(c.key)
	c.key = netip.Prefix{}
}
