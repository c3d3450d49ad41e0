package proxy

import (
	"io"
	"net/http"
)

// Observer measures proxied traffic (internal/metrics implements it).
// Calls come from the request's goroutines and must not block.
type Observer interface {
	// ProxyStream is called as a request is forwarded; done when it ends.
	ProxyStream() (done func())
	// ProxyBytes counts body bytes as they are sent to (in) and received
	// from (out) a sandbox, so long streams show up while they flow.
	ProxyBytes(in, out int64)
}

// SetObserver installs o (before serving; nil: none).
func (p *Proxy) SetObserver(o Observer) { p.obs = o }

// observed wraps w and r's body to count bytes when an observer is set,
// and returns the func to call at the end of the request.
func (p *Proxy) observed(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	if p.obs == nil {
		return w, func() {}
	}
	done := p.obs.ProxyStream()
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: r.Body, obs: p.obs}
	}
	return &countingWriter{ResponseWriter: w, obs: p.obs}, done
}

// countingWriter counts response body bytes; Unwrap keeps flushing,
// hijacking and deadlines reachable (http.ResponseController).
type countingWriter struct {
	http.ResponseWriter
	obs Observer
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.obs.ProxyBytes(0, int64(n))
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingBody counts request body bytes read.
type countingBody struct {
	io.ReadCloser
	obs Observer
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.obs.ProxyBytes(int64(n), 0)
	return n, err
}
