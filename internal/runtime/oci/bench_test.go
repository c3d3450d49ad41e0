package oci

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/runtime/runtimetest"
)

// BenchmarkCreate measures create+start of one sandbox (the runtime's
// `run --detach` returning: init started) and reports, as extra metrics,
// the time until the init has written a file ("ready-ms") and Delete's
// cost ("delete-ms"). One layer and netns are reused across iterations.
//
//	go test -run '^$' -bench Create -benchtime 20x ./internal/runtime/oci/
func BenchmarkCreate(b *testing.B) {
	for _, kind := range []string{"runsc", "crun", "runc"} {
		b.Run(kind, func(b *testing.B) { benchCreate(b, kind) })
	}
}

func benchCreate(b *testing.B, kind string) {
	r, err := New(kind, testConfig(kind, b.TempDir()))
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { r.Close() })
	fx := runtimetest.NewFixture(b)
	s, rootfs := fx.Spec(b, r, "echo > /var/tmp/ready; exec sleep 1000", runtime.Limits{})
	ready := filepath.Join(rootfs, "var/tmp/ready")
	ctx := context.Background()
	var readyTotal, delTotal time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		sb, err := r.Create(ctx, s)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, err := os.Stat(ready); err != nil; _, err = os.Stat(ready) {
			time.Sleep(time.Millisecond)
		}
		readyTotal += time.Since(start)
		t := time.Now()
		if err := sb.Delete(ctx); err != nil {
			b.Fatal(err)
		}
		delTotal += time.Since(t)
		os.Remove(ready)
		b.StartTimer()
	}
	b.ReportMetric(readyTotal.Seconds()*1000/float64(b.N), "ready-ms")
	b.ReportMetric(delTotal.Seconds()*1000/float64(b.N), "delete-ms")
}
