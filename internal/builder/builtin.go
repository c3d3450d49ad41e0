package builder

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/sbx-dev/sbx/internal/template"
	"github.com/sbx-dev/sbx/internal/template/layers"
)

// BuiltinOwner marks the layers of built-in templates in the layer store
// (layers.Store.Owner): a daemon's GC releases only its own uses, so a
// layer a built-in stands on is never removed by one.
const BuiltinOwner = "builtin"

// Builtin says where a built-in template is built and registered.
type Builtin struct {
	Templates *template.Store // registrations (the templates dir)
	Layers    *layers.Store   // Owner BuiltinOwner; Shift set to make user-namespace copies
	TmpDir    string          // scratch (views of layer stacks)
	Mirror    string          // Debian mirror (default template.DefaultMirror)
	Seed      string          // see Debootstrap.Seed
	UIDBase   uint32          // of Layers.Shift, recorded in the registration
}

// Build builds the built-in def by the builder's own machinery, with no
// daemon and no sandbox (a build from a source with no steps needs none):
// the Debian source's layer, then the provisioning layer every image gets,
// each taken from the layer store when its key is there; then the
// user-namespace copies (crun, runc), and the registration, so every daemon
// sharing the templates dir serves it. An unchanged definition's rebuild
// takes well under a second. Built-in builds are serialized (Lock), across
// processes too. Progress goes to log. Needs root.
func (b *Builtin) Build(ctx context.Context, def template.Definition, log io.Writer) (*template.Template, error) {
	t0 := time.Now()
	unlock, err := b.Templates.Lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("build template %s: %w", def.Name, err)
	}
	defer unlock()
	st, err := b.stack(ctx, def, log)
	if err != nil {
		return nil, fmt.Errorf("build template %s: %w", def.Name, err)
	}
	t := b.record(def, st)
	if old, err := b.Templates.Get(def.Name); err == nil && upToDate(old, t) && b.complete(old) {
		fmt.Fprintf(log, "template %s is up to date (build %s)\n", def.Name, old.BuildID)
		return old, nil
	}
	debian := filepath.Join("..", filepath.Base(b.Layers.Dir), st.layers[0])
	links := map[string]string{"rootfs": filepath.Join(debian, "r", "fs")}
	if b.Layers.Shift != nil {
		links["rootfs-userns"] = filepath.Join(debian, "fs-userns")
	}
	if err := b.Templates.Register(t, links); err != nil {
		return nil, fmt.Errorf("build template %s: register: %w", def.Name, err)
	}
	fmt.Fprintf(log, "template %s built in %s\n", def.Name, time.Since(t0).Round(100*time.Millisecond))
	return t, nil
}

// stack makes (or takes from the layer store) def's layers: the Debian
// source, the provisioning layer, and their user-namespace copies.
func (b *Builtin) stack(ctx context.Context, def template.Definition, log io.Writer) (*state, error) {
	mirror := b.Mirror
	if mirror == "" {
		mirror = template.DefaultMirror
	}
	src := Debootstrap{Suite: template.Suite, Mirror: mirror, Include: def.Base, Apt: def.Apt, Seed: b.Seed}
	st, err := b.source(ctx, src, log)
	if err != nil {
		return nil, fmt.Errorf("debian source: %w", err)
	}
	id, err := provisioned(ctx, &Registry{Layers: b.Layers}, b.TmpDir, st, func(f string, a ...any) { fmt.Fprintf(log, "    "+f+"\n", a...) })
	if err == nil {
		err = b.push(st, id)
	}
	if err == nil {
		err = b.shift(ctx, st.layers, log)
	}
	return st, err
}

// upToDate reports whether registration old serves what t would.
func upToDate(old, t *template.Template) bool {
	return old.Key == t.Key && old.Runtime == t.Runtime && old.MemoryMB == t.MemoryMB
}

// record is the registration of def built as st.
func (b *Builtin) record(def template.Definition, st *state) *template.Template {
	t := &template.Template{Name: def.Name, Created: time.Now().UTC(), Packages: def.Packages(),
		EnvdVersion: template.EnvdVersion, UIDBase: b.UIDBase, BuildID: randomHex(8), Layers: st.layers, Key: st.key,
		Runtime: def.Runtime, MemoryMB: def.MemoryMB}
	for _, l := range st.layers {
		t.SizeBytes += b.Layers.Size(l)
	}
	return t
}

// source returns the state of the Debian source's layer, made first if the
// store lacks it.
func (b *Builtin) source(ctx context.Context, src Debootstrap, log io.Writer) (*state, error) {
	key := src.key()
	id, _ := layers.ID(key)
	if b.Layers.Has(id) {
		fmt.Fprintf(log, "==> debian %s: cached (layer %s)\n", src.Suite, id)
	} else {
		fmt.Fprintf(log, "==> debian %s with %d packages (layer %s)\n", src.Suite, len(src.Include)+len(src.Apt), id)
		t0 := time.Now()
		if _, err := b.Layers.Ensure(ctx, key, func(dir string) error { return src.fill(ctx, dir, log) }); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "    done in %s\n", time.Since(t0).Round(100*time.Millisecond))
	}
	st := &state{key: key}
	return st, b.push(st, id)
}

// push puts layer id on st, marked as a built-in's.
func (b *Builtin) push(st *state, id string) error {
	if err := b.Layers.Use(id); err != nil {
		return err
	}
	st.layers = append(st.layers, id)
	return nil
}

// shift makes the user-namespace copies of ls (a copy is made once).
func (b *Builtin) shift(ctx context.Context, ls []string, log io.Writer) error {
	if b.Layers.Shift == nil {
		return nil
	}
	t0 := time.Now()
	for _, id := range ls {
		if _, err := b.Layers.EnsureUserNS(ctx, id); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "==> user-namespace copies (crun, runc) ready in %s\n", time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// complete reports whether every layer of t is in the store.
func (b *Builtin) complete(t *template.Template) bool {
	for _, l := range t.Layers {
		if !b.Layers.Has(l) {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	p := make([]byte, n)
	_, _ = rand.Read(p)
	return hex.EncodeToString(p)
}
