package dist

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sbx-dev/sbx/internal/template/oci"
)

// Pull makes every layer of build m present in the layer store (and used
// by its Owner), fetching the missing ones from the registry. The image
// (by m.Digest when set: go-containerregistry checks the manifest against
// it, so the chain manifest → config → layers is rooted in the shared
// store, not in the registry) must describe exactly m's stack; each layer's compressed bytes are
// checked against its manifest digest (go-containerregistry) and its
// uncompressed bytes against its config diff id. A failed layer leaves
// nothing in the store; layers pulled before it stay (they are complete
// and verified, and the next pull skips them). It reports how many layers
// it pulled.
func (r *Remote) Pull(ctx context.Context, m Meta) (int, error) {
	if r.missing(m.Layers) == nil {
		return 0, r.use(m.Layers)
	}
	n, err := r.pull(ctx, m)
	if err != nil {
		return n, fmt.Errorf("pull template %s build %s from %s: %w", m.TemplateID, m.BuildID, r.Repo, err)
	}
	return n, r.use(m.Layers)
}

func (r *Remote) pull(ctx context.Context, m Meta) (int, error) {
	ref, err := r.pullRef(m)
	if err != nil {
		return 0, err
	}
	img, err := remote.Image(ref, r.options(ctx)...)
	if err != nil {
		return 0, err
	}
	ls, ids, err := stack(img, m.Layers)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, l := range ls {
		filled := false
		_, err := r.Layers.Ensure(ctx, ids[i], func(dir string) error {
			filled = true
			return r.fill(ctx, l, dir)
		})
		if err != nil {
			return n, err
		}
		if filled {
			n++
			r.saveDesc(ids[i], l)
		}
	}
	return n, nil
}

// stack returns img's layers and their ids, checking that they are want.
func stack(img v1.Image, want []string) ([]v1.Layer, []string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	var ids []string
	if err := json.Unmarshal([]byte(cf.Config.Labels[LabelLayers]), &ids); err != nil {
		return nil, nil, fmt.Errorf("%w: no layer list (%v)", ErrMismatch, err)
	}
	if !slices.Equal(ids, want) {
		return nil, nil, fmt.Errorf("%w: the image holds layers %v, the build %v", ErrMismatch, ids, want)
	}
	mf, err := img.Manifest()
	if err != nil {
		return nil, nil, err
	}
	ls, err := img.Layers()
	if err != nil {
		return nil, nil, err
	}
	if len(ls) != len(ids) || len(mf.Layers) != len(ids) {
		return nil, nil, fmt.Errorf("%w: %d layers for %d ids", ErrMismatch, len(ls), len(ids))
	}
	for i, d := range mf.Layers {
		if d.Annotations[AnnLayer] != ids[i] {
			return nil, nil, fmt.Errorf("%w: layer %d is %q, not %s", ErrMismatch, i, d.Annotations[AnnLayer], ids[i])
		}
	}
	return ls, ids, nil
}

// fill unpacks layer l into dir, checking its content against its diff id.
func (r *Remote) fill(ctx context.Context, l v1.Layer, dir string) error {
	diff, err := l.DiffID()
	if err != nil {
		return err
	}
	rc, err := l.Uncompressed() // verifies the compressed digest at EOF
	if err != nil {
		return err
	}
	defer rc.Close()
	h := sha256.New()
	if err := oci.Unpack(ctx, io.TeeReader(rc, h), dir, r.maxLayer(), nil); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != diff.Hex {
		return fmt.Errorf("%w: layer content hashes to sha256:%s, not its diff id %s", ErrMismatch, got, diff)
	}
	return nil
}

// missing returns the ids of ls not in the layer store.
func (r *Remote) missing(ls []string) []string {
	var out []string
	for _, id := range ls {
		if !r.Layers.Has(id) {
			out = append(out, id)
		}
	}
	return out
}

// use records the store owner's use of every layer (the GC keeps them).
func (r *Remote) use(ls []string) error {
	for _, id := range ls {
		if err := r.Layers.Use(id); err != nil {
			return err
		}
	}
	return nil
}
