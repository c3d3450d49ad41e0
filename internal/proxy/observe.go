package proxy

import (
	"io"
	"net/http"
	"sync/atomic"
)

// Observer measures proxied traffic (internal/metrics implements it).
type Observer interface {
	// ProxyStream is called as a request is forwarded; done when it ends.
	ProxyStream() (done func())
	// ProxyBytes counts body bytes sent to (in) and received from (out)
	// the sandbox by one request.
	ProxyBytes(in, out int64)
}

// SetObserver installs o (before serving; nil: none).
func (p *Proxy) SetObserver(o Observer) { p.obs = o }

// observed wraps w and r's body to count bytes when an observer is set,
// and returns the func that reports them at the end of the request.
func (p *Proxy) observed(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	if p.obs == nil {
		return w, func() {}
	}
	done := p.obs.ProxyStream()
	cw := &countingWriter{ResponseWriter: w}
	var cr *countingBody
	if r.Body != nil && r.Body != http.NoBody {
		cr = &countingBody{ReadCloser: r.Body}
		r.Body = cr
	}
	return cw, func() {
		var in int64
		if cr != nil {
			in = cr.n.Load()
		}
		p.obs.ProxyBytes(in, cw.n.Load())
		done()
	}
}

// countingWriter counts response body bytes; Unwrap keeps flushing,
// hijacking and deadlines reachable (http.ResponseController).
type countingWriter struct {
	http.ResponseWriter
	n atomic.Int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingBody counts request body bytes read.
type countingBody struct {
	io.ReadCloser
	n atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
