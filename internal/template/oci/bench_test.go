package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BenchmarkPull compares pull throughput from a registry on loopback
// (go-containerregistry's in-process registry behind httptest) of an image of
// 3 gzipped layers, ≈ 200 MB of random bytes in 12 files, made and pushed once
// per test binary run:
//
//   - sbx: (*Puller).Pull into a fresh DirStore each iteration (download,
//     gunzip, DiffID check, unpack into files);
//   - crane: crane.Pull + crane.Save to a temporary tarball, what `crane pull
//     IMAGE FILE` does (download, digest check, one file).
//
// MB/s is the image's compressed bytes per second of one pull. Needs root (the
// unpack chowns). Not part of `go test`; run it with
//
//	go test -run '^$' -bench Pull -benchtime 5x -count 5 -v ./internal/template/oci
//
// (-v prints the medians and their ratio).
func BenchmarkPull(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (the unpack chowns)")
	}
	ref, size := benchImage(b)
	rates := map[string][]rate{} // one per run of the sub-benchmark (-count, and the b.N=1 probe)
	tmp := func(b *testing.B) string {
		d, err := os.MkdirTemp("", "sbx-bench-pull-")
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	run := func(name string, pull func(b *testing.B, dir string)) {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				dir := tmp(b)
				b.StartTimer()
				pull(b, dir)
				b.StopTimer()
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			r := float64(size) * float64(b.N) / 1e6 / b.Elapsed().Seconds()
			b.ReportMetric(r, "MB/s")
			rates[name] = append(rates[name], rate{b.N, r})
		})
	}
	run("sbx", func(b *testing.B, dir string) {
		p := &Puller{}
		if _, err := p.Pull(context.Background(), ref, nil, &DirStore{Dir: dir}); err != nil {
			b.Fatal(err)
		}
	})
	run("crane", func(b *testing.B, dir string) {
		img, err := crane.Pull(ref, crane.Insecure)
		if err != nil {
			b.Fatal(err)
		}
		if err := crane.Save(img, ref, filepath.Join(dir, "image.tar")); err != nil {
			b.Fatal(err)
		}
	})
	sbx, ns := median(rates["sbx"])
	cr, nc := median(rates["crane"])
	if sbx > 0 && cr > 0 {
		b.Logf("image %.1f MB compressed; medians of %d and %d runs: sbx %.0f MB/s, crane %.0f MB/s, sbx/crane %.2f×",
			float64(size)/1e6, ns, nc, sbx, cr, sbx/cr)
	}
}

type rate struct {
	n   int
	mbs float64
}

// median is the median rate of the runs with the largest b.N (not the
// probes) and how many there were.
func median(rs []rate) (float64, int) {
	maxN := 0
	for _, r := range rs {
		maxN = max(maxN, r.n)
	}
	var a []float64
	for _, r := range rs {
		if r.n == maxN {
			a = append(a, r.mbs)
		}
	}
	if len(a) == 0 {
		return 0, 0
	}
	slices.Sort(a)
	return a[len(a)/2], len(a)
}

var bench struct {
	once sync.Once
	ref  string
	size int64
	err  error
}

// benchImage serves the benchmark image (made once) and returns its
// reference and the sum of its compressed layer sizes.
func benchImage(b *testing.B) (string, int64) {
	bench.once.Do(func() {
		t0 := time.Now()
		srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		// left running for the other benchmarks of this binary run
		host := strings.TrimPrefix(srv.URL, "http://")
		bench.ref = host + "/bench/random:1"
		img := empty.Image
		rng := rand.New(rand.NewChaCha8([32]byte{'s', 'b', 'x'}))
		for i, mb := range []int{96, 64, 40} { // ≈ 200 MB
			gz, err := randomLayer(rng, fmt.Sprintf("layer%d", i), mb<<20, 4)
			if err != nil {
				bench.err = err
				return
			}
			l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(gz)), nil
			})
			if err != nil {
				bench.err = err
				return
			}
			if img, err = mutate.AppendLayers(img, l); err != nil {
				bench.err = err
				return
			}
			bench.size += int64(len(gz))
		}
		r, err := name.ParseReference(bench.ref)
		if err != nil {
			bench.err = err
			return
		}
		bench.err = remote.Write(r, img)
		b.Logf("made and pushed %s (%.1f MB compressed) in %v", bench.ref, float64(bench.size)/1e6, time.Since(t0).Round(time.Millisecond))
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.ref, bench.size
}

// randomLayer is a gzipped tar of files files of random bytes, total bytes.
func randomLayer(rng *rand.Rand, dir string, total, files int) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755}); err != nil {
		return nil, err
	}
	chunk := make([]byte, 1<<20)
	for f := range files {
		n := total / files
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("%s/f%d", dir, f), Mode: 0o644, Size: int64(n)}); err != nil {
			return nil, err
		}
		for n > 0 {
			c := chunk[:min(n, len(chunk))]
			for i := 0; i+8 <= len(c); i += 8 {
				v := rng.Uint64()
				for j := range 8 {
					c[i+j] = byte(v >> (8 * j))
				}
			}
			if _, err := tw.Write(c); err != nil {
				return nil, err
			}
			n -= len(c)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
