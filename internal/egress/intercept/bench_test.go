package intercept

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
)

// BenchmarkRequest compares a kept-alive HTTPS request to the upstream
// directly with the same request through the interceptor (loopback, after
// the handshakes): the added latency per request (#17 target: ≤ 1 ms p50).
func BenchmarkRequest(b *testing.B) {
	r := newRig(b, true, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: r.ic.RootCAs, ServerName: testName}}}
	via := r.client(true)
	for _, c := range []struct {
		name string
		cl   *http.Client
		url  string
	}{{"direct", direct, r.up.URL}, {"intercepted", via, "https://example.com/"}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := c.cl.Get(c.url)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body) // drained: the connection is kept alive
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkThroughput: 8 MiB responses, direct and through the interceptor
// (#17 target: ≥ 0.7× direct).
func BenchmarkThroughput(b *testing.B) {
	body := make([]byte, 8<<20)
	r := newRig(b, true, func(w http.ResponseWriter, _ *http.Request) { w.Write(body) })
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: r.ic.RootCAs, ServerName: testName}}}
	for _, c := range []struct {
		name string
		cl   *http.Client
		url  string
	}{{"direct", direct, r.up.URL}, {"intercepted", r.client(true), "https://example.com/"}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			buf := make([]byte, 64<<10)
			for b.Loop() {
				resp, err := c.cl.Get(c.url)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		})
	}
}
