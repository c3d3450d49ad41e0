package proxy

import (
	"io"
	"net/http"
	"strconv"
	"testing"
)

// BenchmarkExposedPortThroughput streams 8 MiB per request from an upstream
// standing in for a server on a sandbox port, through the proxy's Host
// routing (<port>-<id>.<domain>), over loopback.
func BenchmarkExposedPortThroughput(b *testing.B) {
	const size = 8 << 20
	chunk := make([]byte, 64<<10)
	front, a, _ := setupWith(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	host := "8000-" + a.ID + ".sbx.test"
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
}
