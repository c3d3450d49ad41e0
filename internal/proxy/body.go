package proxy

import (
	"errors"
	"io"
	"sync"
	"time"
)

// errBodyCut is what a read of a forwarded request body returns after the
// handler that owns it has returned.
var errBodyCut = errors.New("proxy: request body read after the request ended")

// cutBody wraps an inbound request body handed to the transport. The
// transport copies it upstream on its own goroutine, which can outlive the
// handler (the upstream answered before the body was sent). On HTTP/1 the
// server reuses the connection's reader once the handler returns, and a read
// still in flight then races it (net/http panics: "invalid concurrent
// Body.Read call"). Cut, called before the handler returns, ends that:
// later reads fail, and a read in flight is interrupted through the
// connection's read deadline and waited for.
//
// If n >= 0 the body has that declared length and reports io.EOF at its end
// without reading the underlying body again (the transport reads once past
// the length to check it).
type cutBody struct {
	r io.ReadCloser

	mu     sync.Mutex // guards the fields below
	cond   *sync.Cond // signalled when busy drops
	n      int64      // bytes left when the length is known; -1 otherwise
	busy   int        // Reads and Closes of r in flight
	eof    bool       // r reported its end: it reads the connection no more
	cut    bool       // the handler returned: no more reads
	closed bool       // Close ran (or runs): the underlying body is closed
}

func newCutBody(r io.ReadCloser, n int64) *cutBody {
	b := &cutBody{r: r, n: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// Read reads from the underlying body unless the body was cut.
func (b *cutBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	switch {
	case b.cut || b.closed:
		b.mu.Unlock()
		return 0, errBodyCut
	case b.eof || b.n == 0:
		b.mu.Unlock()
		return 0, io.EOF
	case b.n > 0 && int64(len(p)) > b.n:
		p = p[:b.n]
	}
	b.busy++
	b.mu.Unlock()

	n, err := b.r.Read(p)

	b.mu.Lock()
	defer b.mu.Unlock()
	b.busy--
	b.cond.Broadcast()
	if b.n > 0 {
		b.n -= int64(n)
		if b.n <= 0 && err == nil {
			err = io.EOF
		}
	}
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close closes the underlying body unless the body was cut. The transport
// calls it from its own goroutine, possibly after the handler returned; the
// server's Close drains what the client still sends (a read of the
// connection), which must never run beside the server's next read (the same
// panic as above). So a Close counts as a read in flight, which Cut waits
// for, and after Cut it does nothing: the server closes the body itself.
func (b *cutBody) Close() error {
	b.mu.Lock()
	if b.cut || b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.busy++
	b.mu.Unlock()

	err := b.r.Close()

	b.mu.Lock()
	defer b.mu.Unlock()
	b.busy--
	b.eof = true
	b.cond.Broadcast()
	return err
}

// Cut stops all further reads. If a read is in flight and the body has not
// reached its end, setDeadline (the connection's read deadline; nil when the
// protocol has none to set) interrupts it and Cut waits for it to return.
func (b *cutBody) Cut(setDeadline func(time.Time) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cut = true
	if b.busy == 0 || b.eof || setDeadline == nil || setDeadline(time.Now()) != nil {
		return
	}
	for b.busy > 0 {
		b.cond.Wait()
	}
	_ = setDeadline(time.Time{})
}
