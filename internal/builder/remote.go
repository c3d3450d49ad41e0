package builder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template/dist"
)

// Remote is the template registry of a cluster (package dist): a ready
// build is pushed to it, and a node lacking a build's layers pulls them.
type Remote interface {
	Push(ctx context.Context, m dist.Meta) (digest string, err error)
	Pull(ctx context.Context, m dist.Meta) (pulled int, err error)
}

// remoteMeta describes build b of template t for the registry.
func remoteMeta(t *store.TemplateRec, b *store.BuildRec, layers []string, cfg store.BuildConfig) dist.Meta {
	c, _ := json.Marshal(cfg)
	m := dist.Meta{TemplateID: b.TemplateID, BuildID: b.ID, Layers: layers, Config: c}
	if t != nil && len(t.Names) > 0 {
		m.Name = t.Names[0]
	}
	return m
}

// pushRemote uploads a finished build's layers to the registry (none set: nothing).
func (s *Service) pushRemote(ctx context.Context, b *store.BuildRec, st *state, lg *buildLog) error {
	if s.reg.Remote == nil {
		return nil
	}
	t, _ := s.reg.lookup(b.TemplateID)
	t0 := time.Now()
	d, err := s.reg.Remote.Push(ctx, remoteMeta(t, b, st.layers, st.cfg))
	if err != nil {
		return &stepError{step: "push", err: err}
	}
	b.Digest = d
	lg.add("info", "push", "pushed to the template registry as %s in %s", d, time.Since(t0).Round(10*time.Millisecond))
	return nil
}

// fetch pulls the layers of build (of template name) that this node lacks
// from the registry; without one, or for a built-in (no build), a missing
// layer is unavailable.
func (r *Registry) fetch(ctx context.Context, name, build string, ls []string) error {
	missing := false
	for _, l := range ls {
		missing = missing || !r.Layers.Has(l)
	}
	if !missing {
		return nil
	}
	if build == "" { // a built-in: each node builds its own
		return fmt.Errorf("%w: template %s: layers missing on this node (rebuild it: sbx template build %s)", sandbox.ErrUnavailable, name, name)
	}
	if r.Remote == nil {
		return fmt.Errorf("%w: template %s: layers missing on this node (no template registry to pull them from)", sandbox.ErrUnavailable, name)
	}
	m := dist.Meta{TemplateID: name, BuildID: build, Layers: ls}
	if b, ok := r.build(build); ok {
		m.Digest = b.Digest
	}
	if _, err := r.Remote.Pull(ctx, m); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	return nil
}

// reloadOnMiss reloads the index from a shared store (another node may
// have made the template), at most once a second; it reports whether it did.
func (r *Registry) reloadOnMiss(err error) bool {
	if !r.Shared || !errors.Is(err, sandbox.ErrNotFound) {
		return false
	}
	r.mu.Lock()
	if time.Since(r.reloaded) < time.Second {
		r.mu.Unlock()
		return false
	}
	r.reloaded = time.Now()
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.Reload(ctx) == nil
}
