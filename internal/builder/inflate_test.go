package builder

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// bomb is a gzip-compressed tar holding an entry "junk" of size zero bytes
// (which no COPY of "ctx" takes) and then "ctx/a".
func bomb(t testing.TB, size int64) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "junk", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zeros)) {
		if _, err := tw.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
			t.Fatal(err)
		}
	}
	_ = tw.WriteHeader(&tar.Header{Name: "ctx/a", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("x"))
	tw.Close()
	zw.Close()
	return b.Bytes()
}

// TestRetargetGzipBomb: an upload that inflates past twice the upload bound
// fails, naming the bound, even when the bytes past it are in an entry the
// COPY skips (before, skipped entries were inflated without any bound); one
// within the bound is copied.
func TestRetargetGzipBomb(t *testing.T) {
	const limit = 1 << 20
	up := bomb(t, 8<<20)
	_, err := retarget(context.Background(), bytes.NewReader(up), io.Discard, "ctx", "/app", limit)
	var tooLarge errInflatedTooLarge
	if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "2097152 bytes") {
		t.Fatalf("retarget of a %d-byte upload inflating to 8 MiB = %v, want the inflate bound (2 MiB) named", len(up), err)
	}
	var out bytes.Buffer
	if tops, err := retarget(context.Background(), bytes.NewReader(bomb(t, limit)), &out, "ctx", "/app", limit); err != nil || len(tops) != 1 {
		t.Fatalf("an upload within the bound = %v, %v", tops, err)
	}
}

// TestRetargetStopsWithContext: the build's end stops an inflate.
func TestRetargetStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := retarget(ctx, bytes.NewReader(bomb(t, 4<<20)), io.Discard, "ctx", "/app", 1<<30); !errors.Is(err, context.Canceled) {
		t.Fatalf("retarget with an ended context = %v, want context.Canceled", err)
	}
}

// BenchmarkGzipBomb measures how long the default bound (512 MiB uploads:
// 1 GiB inflated) lets a 2 GiB-deep bomb run.
func BenchmarkGzipBomb(b *testing.B) {
	up := bomb(b, 2<<30)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		_, err := retarget(context.Background(), bytes.NewReader(up), io.Discard, "ctx", "/app", 512<<20)
		b.ReportMetric(time.Since(t0).Seconds(), "s/bomb")
		if err == nil {
			b.Fatal("bomb accepted")
		}
	}
}
