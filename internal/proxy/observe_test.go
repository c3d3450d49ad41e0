package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

type countObs struct {
	mu              sync.Mutex
	in, out         int64
	streams, closed int
}

func (o *countObs) ProxyStream() func() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.streams++
	return func() { o.mu.Lock(); o.closed++; o.mu.Unlock() }
}

func (o *countObs) ProxyBytes(in, out int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.in += in
	o.out += out
}

// TestObservedCountsBytes: body bytes both ways are counted as they flow,
// the stream is closed once, and the wrapper keeps flushing reachable.
func TestObservedCountsBytes(t *testing.T) {
	obs := &countObs{}
	p := &Proxy{obs: obs}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w2, done := p.observed(w, r)
		defer done()
		b, _ := io.ReadAll(r.Body)
		_, _ = w2.Write([]byte(strings.ToUpper(string(b))))
		if err := http.NewResponseController(w2).Flush(); err != nil {
			t.Errorf("flush through the wrapper: %v", err)
		}
		_, _ = w2.Write([]byte("!"))
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL, "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if string(b) != "HELLO!" || obs.in != 5 || obs.out != 6 || obs.streams != 1 || obs.closed != 1 {
		t.Fatalf("body %q, observed %+v", b, obs)
	}
}
