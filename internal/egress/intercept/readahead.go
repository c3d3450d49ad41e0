package intercept

import (
	"io"
	"net"
	"sync"
)

// readahead is an upstream response body read by its own goroutine into a
// small bounded queue, so that one Read hands the proxy everything the
// upstream has delivered since the last Read (up to len(p)) and waits only
// when nothing has arrived. It holds the sandbox side's batching (out)
// while it hands bytes out and releases it before it waits.
//
// Why: httputil.ReverseProxy flushes after every Read of a body without a
// Content-Length (chunked, SSE), and a Read of the upstream returns what
// one or two TLS records held. Written that way, an 8 MiB download reached
// a gVisor sandbox as ~1000 TLS records of 24 B to 16 KiB (four per 32 KiB
// Read) in ~480 packets, where the spliced stream is 512 full records in
// ~225 packets; the Sentry and curl spent a third more CPU on it (see
// docs/BENCHMARKS.md). Batching only what is already here keeps streaming
// prompt: a lone event is handed on, and flushed, at once.
type readahead struct {
	src  io.ReadCloser
	out  gate          // held while Read has bytes for the proxy; nil: none
	full chan []byte   // chunks read from src, in order; closed when fill ends
	free chan []byte   // chunks Read is done with, for fill to reuse
	stop chan struct{} // closed by Close: fill ends without blocking
	once sync.Once
	err  error // src's final error; written by fill before it closes full

	made int    // chunks fill has taken from chunkPool (fill only)
	cur  []byte // unread part of the chunk Read holds (Read only)
	buf  []byte // that whole chunk (Read only)
}

const (
	// readaheadChunk is one Read of src: 32 KiB less the framing net/http
	// puts around it in a chunked response ("7ff8\r\n", "\r\n"), so that
	// a chunk written alone fills two TLS records exactly, not two and a
	// record of 8 bytes.
	readaheadChunk  = 32<<10 - 8
	readaheadChunks = 4 // at most this many chunks are read ahead
)

// gate is what a readahead holds while the proxy writes what it read
// (batchConn): nil is a gate that does nothing.
type gate interface {
	hold()
	release()
}

type noGate struct{}

func (noGate) hold()    {}
func (noGate) release() {}

var chunkPool = sync.Pool{New: func() any { b := make([]byte, readaheadChunk); return &b }}

// copyBuffers are the proxy's copy buffers (ReverseProxy.BufferPool): as
// large as the readahead queue, so one Read can take all of it: the
// largest batch the proxy writes (and flushes) at once.
var copyBuffers = &bufferPool{sync.Pool{New: func() any { b := make([]byte, readaheadChunk*readaheadChunks); return &b }}}

type bufferPool struct{ p sync.Pool }

func (bp *bufferPool) Get() []byte  { return *bp.p.Get().(*[]byte) }
func (bp *bufferPool) Put(b []byte) { bp.p.Put(&b) }

// newReadahead starts reading src. The caller must Close it: that stops
// the goroutine (closing src unblocks a Read in flight).
func newReadahead(src io.ReadCloser, out gate) *readahead {
	if out == nil {
		out = noGate{}
	}
	r := &readahead{src: src, out: out, full: make(chan []byte, readaheadChunks),
		free: make(chan []byte, readaheadChunks), stop: make(chan struct{})}
	go r.fill()
	return r
}

// fill reads src into chunks until src fails or ends, or Close.
func (r *readahead) fill() {
	defer close(r.full)
	for {
		buf, ok := r.chunk()
		if !ok {
			return
		}
		n, err := r.src.Read(buf)
		if n == 0 {
			r.free <- buf // room: this chunk came from free or was new
		} else {
			select {
			case r.full <- buf[:n]:
			case <-r.stop:
				return
			}
		}
		if err != nil {
			r.err = err
			return
		}
	}
}

// chunk is a free chunk (a new one while fewer than readaheadChunks are
// out), or false once Close was called.
func (r *readahead) chunk() ([]byte, bool) {
	select {
	case b := <-r.free:
		return b[:cap(b)], true
	default:
	}
	if r.made < readaheadChunks {
		r.made++
		return *chunkPool.Get().(*[]byte), true
	}
	select {
	case b := <-r.free:
		return b[:cap(b)], true
	case <-r.stop:
		return nil, false
	}
}

// Read copies what has been read ahead into p, waiting only while nothing
// has; at the end it returns src's error (io.EOF for a complete body).
func (r *readahead) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.cur) == 0 && !r.next(n == 0) {
			break
		}
		c := copy(p[n:], r.cur)
		r.cur, n = r.cur[c:], n+c
	}
	if n > 0 {
		r.out.hold()
	}
	if n > 0 || len(p) == 0 {
		return n, nil
	}
	r.out.release()
	if r.err == nil {
		return 0, net.ErrClosed // fill was stopped by Close
	}
	return 0, r.err
}

// next gives back the chunk Read has used up and takes the next one:
// waiting for it when wait, else only if it is already there. false: none
// (not yet, or fill has ended and every chunk is read).
func (r *readahead) next(wait bool) bool {
	if r.buf != nil {
		r.free <- r.buf // room: every chunk out is in full, free or here
		r.buf = nil
	}
	var b []byte
	var ok bool
	select {
	case b, ok = <-r.full:
	default:
		if !wait {
			return false
		}
		r.out.release() // the proxy's writes go out before this waits
		b, ok = <-r.full
	}
	if !ok {
		r.recycle()
		return false
	}
	r.cur, r.buf = b, b
	return true
}

// recycle returns the chunks to the pool once fill has ended and Read has
// drained full: nothing refers to them any more.
func (r *readahead) recycle() {
	for {
		select {
		case b := <-r.free:
			b = b[:cap(b)]
			chunkPool.Put(&b)
		default:
			return
		}
	}
}

// Close stops fill and closes src (which ends a Read of it in flight).
func (r *readahead) Close() error {
	r.out.release()
	r.once.Do(func() { close(r.stop) })
	return r.src.Close()
}
