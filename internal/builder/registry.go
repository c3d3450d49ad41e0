package builder

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template"
	"github.com/sbx-dev/sbx/internal/template/layers"
)

// index is the in-memory view of the template records that creates resolve
// against; it is rebuilt from the store after every change.
type index struct {
	templates map[string]*store.TemplateRec // by id
	byName    map[nameKey]string            // (team, name) → id
	owner     map[string]string             // template id → team ("" default)
	builds    map[string]*store.BuildRec    // by id
	tags      map[string]map[string]string  // template id → tag → build id
}

// Registry resolves template references for sandbox creates: built-in
// templates (registered in the templates dir, package template), user
// templates and their builds
// (the database, layers), and the transient stacks of builds in progress.
// It implements sandbox.Templates. mu guards idx and transient.
type Registry struct {
	Builtins *template.Store
	Layers   *layers.Store
	Store    *store.Store
	UIDBase  uint32
	// Remote, if set, receives every ready build and serves the layers a
	// build made on another node lacks here (pulled on first use).
	Remote Remote
	// Shared: the store is shared with other nodes, whose templates a miss
	// reloads the index for.
	Shared bool

	// reloading serializes Reloads, so that the index installed last was
	// read last: it holds every write made before any Reload began.
	reloading sync.Mutex
	mu        sync.RWMutex
	reloaded  time.Time // last reloadOnMiss
	idx       index
	transient map[string]sandbox.Template
	spawns    map[string]spawn // not yet written to the store
}

// spawn counts creates from one template since the last flush.
type spawn struct {
	n    int64
	last time.Time
}

// Spawned implements sandbox.Spawner: it counts in memory; FlushSpawns
// writes the counts to the store.
func (r *Registry) Spawned(templateID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.idx.templates[templateID]; !ok {
		return // built-in or transient
	}
	if r.spawns == nil {
		r.spawns = map[string]spawn{}
	}
	sp := r.spawns[templateID]
	sp.n, sp.last = sp.n+1, time.Now().UTC()
	r.spawns[templateID] = sp
}

// FlushSpawns adds the counted creates to the template records.
func (r *Registry) FlushSpawns(ctx context.Context) error {
	r.mu.Lock()
	pending := r.spawns
	r.spawns = nil
	recs := map[string]store.TemplateRec{}
	for id := range pending {
		if t, ok := r.idx.templates[id]; ok {
			recs[id] = *t
		}
	}
	r.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	for id, t := range recs {
		sp := pending[id]
		t.SpawnCount, t.LastSpawnedAt = t.SpawnCount+sp.n, sp.last
		if err := r.Store.PutTemplate(ctx, &t); err != nil {
			return err
		}
	}
	return r.Reload(ctx)
}

// Reload rebuilds the index from the store. Reloads run one at a time:
// before, two at once could install the index read first last, losing a
// write the other had read (a ready build answered "building" until the next
// Reload).
func (r *Registry) Reload(ctx context.Context) error {
	r.reloading.Lock()
	defer r.reloading.Unlock()
	ts, err := r.Store.Templates(ctx)
	if err != nil {
		return err
	}
	bs, err := r.Store.Builds(ctx, "")
	if err != nil {
		return err
	}
	tags, err := r.Store.Tags(ctx, "")
	if err != nil {
		return err
	}
	owners, err := r.Store.TemplateOwners(ctx)
	if err != nil {
		return err
	}
	idx := index{templates: map[string]*store.TemplateRec{}, byName: map[nameKey]string{}, owner: owners,
		builds: map[string]*store.BuildRec{}, tags: map[string]map[string]string{}}
	for _, t := range ts {
		idx.templates[t.ID] = t
		for _, n := range t.Names {
			idx.byName[nameKey{owners[t.ID], n}] = t.ID
		}
	}
	for _, b := range bs {
		idx.builds[b.ID] = b
	}
	for _, t := range tags {
		if idx.tags[t.TemplateID] == nil {
			idx.tags[t.TemplateID] = map[string]string{}
		}
		idx.tags[t.TemplateID][t.Tag] = t.BuildID
	}
	r.mu.Lock()
	r.idx = idx
	r.mu.Unlock()
	return nil
}

// build returns a build record from the index.
func (r *Registry) build(id string) (*store.BuildRec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	b, ok := r.idx.builds[id]
	return b, ok
}

// has reports whether the registry holds a template named (or with id) ref.
func (r *Registry) has(ref string) bool {
	_, ok := r.lookup(ref)
	return ok
}

// splitRef splits "name:tag" (tag defaults to "latest"; E2B's "default"
// is "latest").
func splitRef(ref string) (name, tag string) {
	name, tag, ok := strings.Cut(ref, ":")
	if !ok || tag == "" {
		tag = "latest"
	}
	return name, canonTag(tag)
}

// lookup finds a user template by id or by a name of the default team
// (lookupIn with team ""); ok false if none.
func (r *Registry) lookup(nameOrID string) (*store.TemplateRec, bool) {
	return r.lookupIn("", nameOrID)
}

// resolveBuild is resolveBuildIn for the default team.
func (r *Registry) resolveBuild(ref string) (*store.TemplateRec, *store.BuildRec, error) {
	return r.resolveBuildIn("", ref)
}

// resolveBuildIn returns the ready build a reference names for team: a
// build id, or a template id or name (lookupIn) with an optional tag.
func (r *Registry) resolveBuildIn(team, ref string) (*store.TemplateRec, *store.BuildRec, error) {
	r.mu.RLock()
	if b, ok := r.idx.builds[ref]; ok {
		t := r.idx.templates[b.TemplateID]
		r.mu.RUnlock()
		if b.Status != "ready" {
			return nil, nil, sandbox.NotFound("build %s is not ready", ref)
		}
		if t == nil { // deleted template: its sandboxes still resolve it by id
			t = &store.TemplateRec{ID: b.TemplateID}
		}
		return t, b, nil
	}
	r.mu.RUnlock()
	name, tag := splitRef(ref)
	t, ok := r.lookupIn(team, name)
	if !ok {
		return nil, nil, sandbox.TemplateNotFound(name)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	bid, ok := r.idx.tags[t.ID][tag]
	b := r.idx.builds[bid]
	if !ok || b == nil || b.Status != "ready" {
		return nil, nil, sandbox.NotFound("template %.64q has no ready build tagged %.64q", name, tag)
	}
	return t, b, nil
}

// Get implements sandbox.Templates.
func (r *Registry) Get(ref string) (sandbox.Template, error) {
	r.mu.RLock()
	tt, ok := r.transient[ref]
	r.mu.RUnlock()
	if ok {
		return tt, nil
	}
	t, b, err := r.resolveBuild(ref)
	if err != nil && r.reloadOnMiss(err) {
		t, b, err = r.resolveBuild(ref)
	}
	if err == nil {
		tt := r.fromBuild(t.ID, b)
		if len(t.Names) > 0 {
			tt.Alias = t.Names[0]
		}
		return tt, nil
	}
	if name, tag := splitRef(ref); tag == "latest" {
		bt, berr := r.Builtins.Get(name)
		if berr == nil {
			return r.builtinTemplate(bt), nil
		}
		if errors.Is(berr, template.ErrOldLayout) {
			return sandbox.Template{}, r.absent(ref, fmt.Errorf("%w: %w", sandbox.ErrNotFound, berr))
		}
	}
	return sandbox.Template{}, r.absent(ref, err)
}

// builtinTemplate is the sandbox template of a built-in: its layer stack,
// with no build to pin (a rebuilt built-in serves every sandbox of it).
func (r *Registry) builtinTemplate(bt *template.Template) sandbox.Template {
	t := r.stackTemplate(bt.Name, "", bt.Layers, store.BuildConfig{})
	t.Runtime, t.MemoryMB = bt.Runtime, bt.MemoryMB
	return t
}

// fromBuild is the sandbox template of a ready build.
func (r *Registry) fromBuild(templateID string, b *store.BuildRec) sandbox.Template {
	t := r.stackTemplate(templateID, b.ID, b.Layers, b.Config)
	t.CPUCount, t.MemoryMB = b.CPUCount, b.MemoryMB
	return t
}

// stackTemplate is a sandbox template over layers (bottom first).
func (r *Registry) stackTemplate(name, build string, ls []string, cfg store.BuildConfig) sandbox.Template {
	ls = append([]string(nil), ls...)
	return sandbox.Template{
		Name: name, Build: build, Env: cfg.Env, Workdir: cfg.Workdir, User: cfg.User,
		StartCmd: cfg.StartCmd, ReadyCmd: cfg.ReadyCmd, StartAs: cfg.StartAs, Snapshot: cfg.Snapshot,
		Lower: func(ctx context.Context, userns bool) (string, error) {
			if err := r.fetch(ctx, name, build, ls); err != nil {
				return "", err
			}
			return r.lower(ctx, ls, userns)
		},
	}
}

// lower is the overlay lower of layers ls (bottom first): topmost first,
// ':'-joined, shifted copies for user-namespace runtimes.
func (r *Registry) lower(ctx context.Context, ls []string, userns bool) (string, error) {
	dirs := make([]string, 0, len(ls))
	for i := len(ls) - 1; i >= 0; i-- {
		d, err := r.layerDir(ctx, ls[i], userns)
		if err != nil {
			return "", err
		}
		dirs = append(dirs, d)
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("%w: template has no layers", sandbox.ErrInvalid)
	}
	return strings.Join(dirs, ":"), nil
}

func (r *Registry) layerDir(ctx context.Context, l string, userns bool) (string, error) {
	if !r.Layers.Has(l) {
		return "", fmt.Errorf("%w: layer %s is missing", sandbox.ErrUnavailable, l)
	}
	if userns {
		return r.Layers.EnsureUserNS(ctx, l)
	}
	return r.Layers.Path(l), nil
}

// List implements sandbox.Templates: built-in templates, then every user
// template's latest ready build.
func (r *Registry) List() ([]sandbox.Template, error) {
	bts, err := r.Builtins.List()
	if err != nil {
		return nil, err
	}
	var out []sandbox.Template
	for _, bt := range bts {
		out = append(out, r.builtinTemplate(bt))
	}
	r.mu.RLock()
	ids := make([]string, 0, len(r.idx.templates))
	for id := range r.idx.templates {
		ids = append(ids, id)
	}
	r.mu.RUnlock()
	for _, id := range ids {
		if t, err := r.Get(id); err == nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// setTransient registers (t non-nil) or drops a build's working stack.
func (r *Registry) setTransient(key string, t *sandbox.Template) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.transient == nil {
		r.transient = map[string]sandbox.Template{}
	}
	if t == nil {
		delete(r.transient, key)
		return
	}
	r.transient[key] = *t
}

// Present lists the user templates (ids, and names as the default team
// names them: another team's as "namespace/name") whose latest ready
// build has every layer in Layers here: a node that reports them starts
// their sandboxes without pulling (the cluster's placement prefers it).
func (r *Registry) Present() []string {
	r.mu.RLock()
	ts := make([]*store.TemplateRec, 0, len(r.idx.templates))
	for _, t := range r.idx.templates {
		ts = append(ts, t)
	}
	r.mu.RUnlock()
	var out []string
	for _, t := range ts {
		_, b, err := r.resolveBuild(t.ID)
		if err != nil || !r.hasLayers(b.Layers) {
			continue
		}
		out = append(out, t.ID)
		for _, n := range t.Names { // as the default team names them
			if team := r.TeamOf(t.ID); team != "" {
				n = Namespace(team) + "/" + n
			}
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func (r *Registry) hasLayers(ls []string) bool {
	for _, l := range ls {
		if !r.Layers.Has(l) {
			return false
		}
	}
	return true
}
