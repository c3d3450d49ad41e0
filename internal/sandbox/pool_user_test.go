package sandbox_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
)

// userTemplates resolves "my-app", as the builder's registry resolves a
// user template's name, to its id ("tpl-1") and current build; the id
// resolves too. The build can change (a rebuild).
type userTemplates struct {
	mu       sync.Mutex
	build    string
	snapshot string // the template's start-command snapshot, if any
}

func (u *userTemplates) Get(ref string) (Template, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if (ref != "my-app" && ref != "tpl-1") || u.build == "" { // "": deleted
		return Template{}, fmt.Errorf("template %q: %w", ref, ErrNotFound)
	}
	return Template{Name: "tpl-1", Alias: "my-app", Build: u.build, Snapshot: u.snapshot, Rootfs: "/t/base", RootfsUserNS: "/t/base-userns"}, nil
}

func (u *userTemplates) List() ([]Template, error) { return nil, nil }

func (u *userTemplates) rebuild(b string) {
	u.mu.Lock()
	u.build = b
	u.mu.Unlock()
}

// TestWarmPoolUserTemplate: --pool NAME=N of a user template (whose
// sandboxes run its id, not its name) serves creates by that name, and
// after a rebuild the pool's sandboxes of the old build are replaced by
// ones of the new build instead of sitting unclaimable in a full pool; a
// deleted template's pool is emptied.
func TestWarmPoolUserTemplate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	tmpls := &userTemplates{build: "b1"}
	key := PoolKey{Template: "my-app", Runtime: "fake"}
	st := openStore(t, t.TempDir())
	m := newUserPoolManager(t, h, st, tmpls, key)
	obs := &claimLabels{deaths: deaths{n: map[string]int{}}}
	m.SetObserver(obs)
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	defer func() { // metrics name the pool as configured, not by the id
		obs.mu.Lock()
		defer obs.mu.Unlock()
		for _, l := range obs.tmpl {
			if l != "my-app" {
				t.Errorf("a claim was observed as template %q, want my-app", l)
			}
		}
	}()

	starts := func() int { h.Mu.Lock(); defer h.Mu.Unlock(); return h.Starts }
	create := func(build string) {
		t.Helper()
		waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
		pooled, before := pooledRecord(t, st), starts()
		in, err := m.Create(ctx, CreateOpts{Template: "my-app", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if in.ID != pooled.ID {
			t.Errorf("a create of my-app (build %s) with its pool full got sandbox %s, not the pooled %s (of build %s; %d sandboxes started since): it was not served by the pool", build, in.ID, pooled.ID, pooled.Build, starts()-before)
		}
		_ = m.Kill(ctx, in.ID)
	}
	create("b1")
	tmpls.rebuild("b2")
	// RunPools notices the rebuild by itself (every 2 s) and refills the
	// pool with the new build: no create pays a cold start for it. (Waited
	// for, not slept: on a loaded machine a check or refill runs late.)
	waitForIn(t, 30*time.Second, func() bool { return m.PoolStats()[key] == 1 && pooledBuild(t, st) == "b2" })
	create("b2")
	// A deleted template's pool is emptied.
	waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
	time.Sleep(300 * time.Millisecond) // no check from the create's claim in flight
	tmpls.rebuild("")
	waitFor(t, func() bool { return m.PoolStats()[key] == 0 })
}

// TestWarmPoolRebuildDuringRefill: a refill that resolved its template
// before a rebuild and lands after it does not offer its sandbox of the old
// build (no create could claim it, and a create would pay a cold start until
// the next periodic check): it is reaped and the pool refilled with the new
// build.
func TestWarmPoolRebuildDuringRefill(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	tmpls := &userTemplates{build: "b1"}
	key := PoolKey{Template: "my-app", Runtime: "fake"}
	m := newUserPoolManager(t, h, st, tmpls, key)
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
	h.Mu.Lock()
	h.StartDelay = time.Second // the refill the claim starts is slow
	h.Mu.Unlock()
	in, err := m.Create(ctx, CreateOpts{Template: "my-app", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Kill(ctx, in.ID)
	waitFor(t, func() bool { // the refill resolved b1 and is starting
		return pooledBuild(t, st) == "b1" && m.PoolStats()[key] == 0
	})
	h.Mu.Lock()
	h.StartDelay = 0
	h.Mu.Unlock()
	tmpls.rebuild("b2")
	waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
	if b := pooledBuild(t, st); b != "b2" {
		t.Fatalf("the pool offers a sandbox of build %q after a rebuild to b2", b)
	}
}

// pooledBuild is the build of st's pooled sandbox record ("" none).
func pooledBuild(t *testing.T, st *store.Store) string {
	t.Helper()
	return pooledRecord(t, st).Build
}

// pooledRecord is st's pooled sandbox record (zero if none).
func pooledRecord(t *testing.T, st *store.Store) store.Sandbox {
	t.Helper()
	all, err := st.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		if r.State == store.StatePooled {
			return *r
		}
	}
	return store.Sandbox{}
}

func newUserPoolManager(t *testing.T, h *sandboxtest.Host, st *store.Store, tmpls Templates, key PoolKey) *Manager {
	port := sandboxtest.StartAgent(t)
	cfg := Config{DefaultRuntime: "fake", AgentPort: port, DefaultTimeout: time.Minute, MaxTimeout: time.Hour,
		Defaults: Resources{CPUCount: 1, MemoryMB: 256, DiskSizeMB: 256, Pids: 100}, ImagesDir: t.TempDir(),
		Max: Resources{CPUCount: 4, MemoryMB: 2048, DiskSizeMB: 2048}, MaxCreating: 4, Pools: map[PoolKey]int{key: 1}}
	m, err := New(cfg, st, Runtimes{"fake": sandboxtest.NewRuntime(h)}, h, sandboxtest.NewLayers(h), tmpls,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestWarmPoolSkipsSnapshotTemplate: a pool of a template whose creates
// restore its start-command snapshot (same runtime and resources) starts
// no sandboxes: they would never be claimed, creates restore first (before,
// the pool held them idle for good).
func TestWarmPoolSkipsSnapshotTemplate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	if err := st.PutSnapshot(ctx, &store.Snapshot{ID: "snap1", TemplateID: "tpl-1", Build: "b1", ForBuild: true,
		Runtime: "fake", CPUCount: 1, MemoryMB: 256, DiskSizeMB: 256}); err != nil {
		t.Fatal(err)
	}
	key := PoolKey{Template: "my-app", Runtime: "fake"}
	m := newUserPoolManager(t, h, st, &userTemplates{build: "b1", snapshot: "snap1"}, key)
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(500 * time.Millisecond)
	pooled := m.PoolStats()[key]
	h.Mu.Lock()
	starts := h.Starts
	h.Mu.Unlock()
	if starts != 0 || pooled != 0 {
		t.Fatalf("%d sandboxes started, %d pooled for a template whose creates restore its snapshot", starts, pooled)
	}
}

// claimLabels records the template label of every pool claim.
type claimLabels struct {
	deaths
	mu   sync.Mutex
	tmpl []string
}

func (c *claimLabels) PoolClaim(tmpl, _ string, _ bool) {
	c.mu.Lock()
	c.tmpl = append(c.tmpl, tmpl)
	c.mu.Unlock()
}
