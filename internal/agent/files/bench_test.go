package files

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"testing"
)

// BenchmarkWriteRead1MiB uploads a 1 MiB file (octet-stream) and downloads
// it again over real HTTP on loopback.
func BenchmarkWriteRead1MiB(b *testing.B) {
	e := newEnv(b)
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	b.SetBytes(2 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := client.Post(e.url+"/files?path=bench.bin", "application/octet-stream", bytes.NewReader(data))
		must(b, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("upload %d", res.StatusCode)
		}
		res, err = client.Get(e.url + "/files?path=bench.bin")
		must(b, err)
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if n != int64(len(data)) {
			b.Fatalf("read %d bytes", n)
		}
	}
}
