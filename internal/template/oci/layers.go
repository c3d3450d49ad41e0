package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/errgroup"
)

// pullConcurrency is how many layers are pulled at once (Docker's default):
// one layer's hashing and unpacking is CPU-bound and serial.
const pullConcurrency = 3

// pullLayers makes every layer present in store and returns their keys,
// bottom first, pulling up to pullConcurrency at once. Each layer may
// unpack what MaxImageBytes leaves when it starts; the sum is checked as
// layers finish.
func (p *Puller) pullLayers(ctx context.Context, layers []v1.Layer, store LayerStore) ([]string, error) {
	budget := p.maxImage()
	for _, l := range layers {
		if size, err := l.Size(); err == nil {
			budget -= size
		}
	}
	if budget < 0 {
		return nil, fmt.Errorf("compressed layers alone exceed the image bound of %s: %w", humanBytes(p.maxImage()), ErrTooLarge)
	}
	q := *p // log lines of concurrent layers must not interleave mid-line
	if p.Log != nil {
		q.Log = &syncWriter{w: p.Log}
	}
	b := &budgetLeft{left: p.maxImage()}
	keys := make([]string, len(layers))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(pullConcurrency)
	for i, l := range layers {
		g.Go(func() error {
			key, err := q.pullLayer(gctx, l, store, b)
			keys[i] = key
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return keys, nil
}

// budgetLeft is the image bound shared by concurrent layer pulls; mu
// guards left.
type budgetLeft struct {
	mu   sync.Mutex
	left int64
}

func (b *budgetLeft) get() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}

// charge takes n bytes; it fails when the image went past its bound.
func (b *budgetLeft) charge(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left -= n; b.left < 0 {
		return fmt.Errorf("the image's layers unpack to more than its bound: %w", ErrTooLarge)
	}
	return nil
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// pullLayer makes layer l present in store under its DiffID hex, charging
// the bytes unpacked to *budget.
func (p *Puller) pullLayer(ctx context.Context, l v1.Layer, store LayerStore, budget *budgetLeft) (string, error) {
	diff, err := l.DiffID()
	if err != nil {
		return "", fmt.Errorf("layer diff id: %w", err)
	}
	filled := false
	_, err = store.Ensure(ctx, diff.Hex, func(dir string) error {
		filled = true
		return p.fill(ctx, l, diff, dir, budget)
	})
	if err != nil {
		return "", fmt.Errorf("layer %s: %w", short(diff), err)
	}
	if !filled {
		p.logf("cached %s", short(diff))
	}
	return diff.Hex, nil
}

// fill downloads layer l and unpacks it into dir, checking that its
// uncompressed content hashes to diff.
func (p *Puller) fill(ctx context.Context, l v1.Layer, diff v1.Hash, dir string, budget *budgetLeft) error {
	if size, err := l.Size(); err == nil {
		p.logf("pulling %s %s", short(diff), humanBytes(size))
	} else {
		p.logf("pulling %s", short(diff))
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	h := sha256.New()
	c := &countReader{r: io.TeeReader(rc, h)}
	if err := Unpack(ctx, c, dir, min(p.maxLayer(), budget.get()), p.Log); err != nil {
		return err
	}
	if err := budget.charge(c.n); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != diff.Hex {
		return fmt.Errorf("content hashes to sha256:%s, not its diff id: %w", got, ErrUnsafeLayer)
	}
	p.logf("unpacked %s %s", short(diff), humanBytes(c.n))
	return nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// short is a digest shortened for humans: "sha256:0123456789ab…".
func short(h v1.Hash) string {
	if len(h.Hex) > 12 {
		return h.Algorithm + ":" + h.Hex[:12] + "…"
	}
	return h.String()
}

// humanBytes formats n as "12.3 MB" (powers of 1000).
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	for f >= unit && i < 5 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", f, "kMGTP"[i-1])
}
