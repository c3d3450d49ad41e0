package intercept

import (
	"net"
	"sync"
)

// batchConn gathers the writes made to it while held and passes them on in
// Writes of batchMax bytes (the rest on release); released, it writes
// through. The sandbox side of an intercepted connection has two: one
// above TLS, so that net/http's small writes (its 4 KiB buffer, each
// chunk's header, the "\r\n" of every flush) become full 16 KiB records,
// and one below TLS, so that those records (one Write each) leave in one
// write(2), as a spliced stream's bytes do. A response's readahead holds
// both while it has bytes ready for the proxy and releases them before it
// waits for the upstream: a write is held only while more is being written
// right behind it, never for a timer or for the upstream.
//
// Why: each write(2) on the sandbox's TCP connection is pushed at once
// (TCP_NODELAY), and gVisor's netstack pays per packet, the sandbox's TLS
// client per record.
type batchConn struct {
	net.Conn
	mu   sync.Mutex // held across the underlying Write: writes stay in order
	held bool
	buf  []byte // while held: len < batchMax == cap
	err  error  // a failed write of buf: every later Write fails with it
}

// batchMax is what a held batchConn writes at once: above TLS, four full
// records; below it, the size of a spliced stream's writes.
const batchMax = 64 << 10

var batchPool = sync.Pool{New: func() any { b := make([]byte, 0, batchMax); return &b }}

func newBatchConn(c net.Conn) *batchConn { return &batchConn{Conn: c} }

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if !c.held {
		return c.Conn.Write(p)
	}
	for n := 0; n < len(p); {
		k := copy(c.buf[len(c.buf):batchMax], p[n:])
		c.buf, n = c.buf[:len(c.buf)+k], n+k
		if len(c.buf) == batchMax {
			if err := c.flushLocked(); err != nil {
				return 0, err
			}
		}
	}
	return len(p), nil
}

// flushLocked writes what was gathered.
func (c *batchConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	if err != nil {
		c.err = err
	}
	return err
}

// hold starts gathering writes.
func (c *batchConn) hold() {
	c.mu.Lock()
	if !c.held {
		c.held, c.buf = true, (*batchPool.Get().(*[]byte))[:0]
	}
	c.mu.Unlock()
}

// release writes what was gathered and stops gathering.
func (c *batchConn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked()
}

func (c *batchConn) releaseLocked() {
	if !c.held {
		return
	}
	_ = c.flushLocked() // a failure is kept in c.err for the next Write
	b := c.buf
	batchPool.Put(&b)
	c.held, c.buf = false, nil
}

// Close writes what was gathered, then closes. With a Write in flight (mu
// held across it) it closes at once, which ends that Write, as
// tls.Conn.Close does: a stalled sandbox cannot make Close hang.
func (c *batchConn) Close() error {
	if c.mu.TryLock() {
		c.releaseLocked()
		c.mu.Unlock()
	}
	return c.Conn.Close()
}

// CloseWrite passes a half-close on, after what was gathered (unless a
// Write is in flight, as for Close).
func (c *batchConn) CloseWrite() error {
	if c.mu.TryLock() {
		c.releaseLocked()
		c.mu.Unlock()
	}
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// batchGates holds and releases batchConns together, outermost first: a
// release writes the plaintext through TLS into the still held record
// batch, then that out.
type batchGates []*batchConn

func (g batchGates) hold() {
	for _, c := range g {
		c.hold()
	}
}

func (g batchGates) release() {
	for _, c := range g {
		c.release()
	}
}
