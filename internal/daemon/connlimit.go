package daemon

import (
	"net"
	"sync"
	"syscall"
)

// connLimit bounds the client connections the daemon's listeners hold at
// once, together. Past it, new connections wait in the kernel's accept
// queue, holding none of the daemon's descriptors, until one closes. Before,
// anyone reaching the port could hold 20,000 idle keep-alive connections
// (2 min each, then open them again): the daemon hit its descriptor limit
// and could neither accept for anyone nor reap sandboxes (EMFILE).
type connLimit struct{ sem chan struct{} }

// newConnLimit allows n connections at once.
func newConnLimit(n int) *connLimit { return &connLimit{sem: make(chan struct{}, n)} }

// defaultConnLimit is half the process's descriptor limit: the rest stays
// for the sandboxes' upstream connections (the proxy holds at most a
// quarter), the database, the runtimes and reaping.
func defaultConnLimit() int {
	var rl syscall.Rlimit
	n := uint64(65536)
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 && rl.Cur < n {
		n = rl.Cur
	}
	return max(int(n/2), 64)
}

// wrap returns ln accepting only while the limit has room.
func (c *connLimit) wrap(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, sem: c.sem, done: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	sem   chan struct{}
	done  chan struct{} // closed by Close: a waiting Accept returns
	close sync.Once
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, sem: l.sem}, nil
}

func (l *limitedListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back once, at its first Close.
type limitedConn struct {
	net.Conn
	sem  chan struct{}
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.sem })
	return err
}
