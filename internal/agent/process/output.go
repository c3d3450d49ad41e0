package process

import (
	"bytes"
	"errors"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Output flow and its memory bound.
//
// Each output of a process (stdout and stderr pipes, or the PTY master) has
// one reader goroutine that reads chunks of at most chunkSize bytes and
// hands each chunk to every current subscriber. A subscriber is one stream
// (Start or Connect) and has a queue of at most queueLen chunks:
//
//   - The Start stream's own subscriber is lossless: when its queue is full
//     the reader blocks, so the process blocks on its next write (the kernel
//     pipe or PTY buffer is full) until the client catches up. Backpressure,
//     not buffering.
//   - Connect subscribers are lossy: when one is full, its oldest queued chunk
//     is dropped to make room. A slow watcher never slows the process or the
//     Start stream.
//   - With no subscriber at all (the Start client went away, as a background
//     command's does) output is read and discarded.
//
// So the agent holds at most queueLen*chunkSize bytes per subscriber plus one
// chunk per reader, however much a process prints and with or without
// newlines.
//
// When the process exits, what it wrote is still in the pipe: the readers
// drain it without waiting (up to drainLimit bytes) and the stream ends.
// Descendants that still hold the pipe (background jobs, daemons) are not
// waited for: from then on their output is read and discarded until they
// close it, so they never block on a full pipe nor die of SIGPIPE.
const (
	chunkSize  = 32 << 10
	queueLen   = 32
	drainLimit = 1 << 20
)

// outKind says which DataEvent field a chunk goes to.
type outKind int

const (
	outStdout outKind = iota
	outStderr
	outPty
)

type chunk struct {
	kind outKind
	data []byte
}

// subscriber is one stream's queue of chunks. ch is closed by the process
// when its output is finished; gone is closed when the stream unsubscribes.
type subscriber struct {
	ch       chan *chunk
	gone     chan struct{}
	lossless bool
	dropped  atomic.Int64
}

func newSubscriber(lossless bool) *subscriber {
	return &subscriber{ch: make(chan *chunk, queueLen), gone: make(chan struct{}), lossless: lossless}
}

// push queues c: blocking while a lossless queue is full (until the
// subscriber is gone), dropping the oldest chunks of a lossy one.
func (s *subscriber) push(c *chunk) {
	if s.lossless {
		select {
		case s.ch <- c:
		case <-s.gone:
		}
		return
	}
	for {
		select {
		case s.ch <- c:
			return
		default:
		}
		select {
		case <-s.ch:
			s.dropped.Add(1)
		default:
		}
	}
}

// output is one readable end the process writes to.
type output struct {
	f    *os.File
	kind outKind
}

// pump reads o until EOF, or until the process has exited and the pipe is
// drained, publishing every chunk; then it marks the output finished and
// discards whatever descendants still write.
func (p *proc) pump(o output) {
	buf := make([]byte, chunkSize)
	eof := false
	for {
		n, err := o.f.Read(buf)
		if n > 0 {
			p.publish(o.kind, buf[:n])
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if !p.hasExited() {
				continue
			}
			eof = drain(o.f, buf, func(b []byte) { p.publish(o.kind, b) })
		} else {
			eof = true // EOF; EIO from a PTY whose last slave closed; or closed
		}
		break
	}
	p.outputs.Done()
	if !eof {
		_ = o.f.SetReadDeadline(time.Time{})
		for {
			if _, err := o.f.Read(buf); err != nil {
				break
			}
		}
	}
	_ = o.f.Close()
}

// drain reads what is already buffered in f without waiting, up to
// drainLimit bytes, and reports whether it reached EOF.
func drain(f *os.File, buf []byte, emit func([]byte)) bool {
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		return true
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	for total := 0; total < drainLimit; {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), buf)
			return true
		}); err != nil {
			return true
		}
		switch {
		case n > 0:
			emit(buf[:n])
			total += n
		case rerr == unix.EINTR:
		case rerr == unix.EAGAIN:
			return false
		default:
			return true // EOF, EIO
		}
	}
	return false
}

// publish hands a copy of b to every subscriber.
func (p *proc) publish(kind outKind, b []byte) {
	c := &chunk{kind: kind, data: bytes.Clone(b)}
	p.mu.Lock()
	subs := p.subs
	p.mu.Unlock()
	for _, s := range subs {
		s.push(c)
	}
}
