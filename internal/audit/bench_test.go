package audit

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkVerify verifies a log of typical API records (≈ 300 bytes each,
// as the daemon writes them); b.SetBytes makes the figure a throughput.
func BenchmarkVerify(b *testing.B) {
	path := filepath.Join(b.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100_000 {
		f := map[string]string{"method": "POST", "path": "/sandboxes/i5x0b2kq8c1r7s3t9v4w/timeout", "status": "200",
			"remote": "127.0.0.1:" + strconv.Itoa(40000+i%20000), "took_ms": "1.234", "request_id": "845fadf7dcb8cc321ca835bc1120c6a3"}
		if err := l.Append("api", "i5x0b2kq8c1r7s3t9v4w", "key:4f2a", f); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ResetTimer()
	for range b.N {
		if _, err := VerifyAnchored(path, nil); err != nil {
			b.Fatal(err)
		}
	}
}
