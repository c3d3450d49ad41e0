package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// pullLayers makes every layer present in store and returns their keys,
// bottom first. budget is what MaxImageBytes leaves for unpacking.
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
	budget = p.maxImage()
	keys := make([]string, 0, len(layers))
	for _, l := range layers {
		key, err := p.pullLayer(ctx, l, store, &budget)
		if err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// pullLayer makes layer l present in store under its DiffID hex, charging
// the bytes unpacked to *budget.
func (p *Puller) pullLayer(ctx context.Context, l v1.Layer, store LayerStore, budget *int64) (string, error) {
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
func (p *Puller) fill(ctx context.Context, l v1.Layer, diff v1.Hash, dir string, budget *int64) error {
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
	if err := Unpack(ctx, c, dir, min(p.maxLayer(), *budget), p.Log); err != nil {
		return err
	}
	*budget -= c.n
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
