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
)

// taggedTemplates resolves one user template (id "tpl-1") with two tags:
// "my-app" and "my-app:latest" to build b1, "my-app:v2" to build b2.
type taggedTemplates struct{}

func (taggedTemplates) Get(ref string) (Template, error) {
	build := map[string]string{"my-app": "b1", "my-app:latest": "b1", "tpl-1": "b1", "my-app:v2": "b2"}[ref]
	if build == "" {
		return Template{}, fmt.Errorf("template %q: %w", ref, ErrNotFound)
	}
	return Template{Name: "tpl-1", Alias: "my-app", Build: build, Rootfs: "/t/base", RootfsUserNS: "/t/base-userns"}, nil
}

func (taggedTemplates) List() ([]Template, error) { return nil, nil }

// TestWarmPoolPerTag: with --pool my-app=1,my-app@v2=1 (two pools of one
// template id, each of another build), a create of each tag is served by
// its own tag's pool, every time: before, a create found "a pool of
// tpl-1" in map order, half the time the other tag's, missed it on the
// build and paid a cold start.
func TestWarmPoolPerTag(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	latest, v2 := PoolKey{Template: "my-app", Runtime: "fake"}, PoolKey{Template: "my-app:v2", Runtime: "fake"}
	port := sandboxtest.StartAgent(t)
	cfg := Config{DefaultRuntime: "fake", AgentPort: port, DefaultTimeout: time.Minute, MaxTimeout: time.Hour,
		Defaults: Resources{CPUCount: 1, MemoryMB: 256, DiskSizeMB: 256, Pids: 100}, ImagesDir: t.TempDir(),
		Max: Resources{CPUCount: 4, MemoryMB: 2048, DiskSizeMB: 2048}, MaxCreating: 4, Pools: map[PoolKey]int{latest: 1, v2: 1}}
	m, err := New(cfg, openStore(t, t.TempDir()), Runtimes{"fake": sandboxtest.NewRuntime(h)}, h, sandboxtest.NewLayers(h),
		taggedTemplates{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	obs := &poolClaims{deaths: deaths{n: map[string]int{}}}
	m.SetObserver(obs)
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for i := range 8 {
		ref, build, pool := "my-app", "b1", "my-app"
		switch i % 3 {
		case 0:
			ref, build, pool = "my-app:v2", "b2", "my-app:v2"
		case 2:
			ref = "my-app:latest"
		}
		waitFor(t, func() bool { s := m.PoolStats(); return s[latest] == 1 && s[v2] == 1 })
		in, err := m.Create(ctx, CreateOpts{Template: ref, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if got := obs.take(); len(got) != 1 || got[0] != pool+" hit" {
			t.Errorf("create %d of %s with both pools full: pool claims %q, want [%q]", i, ref, got, pool+" hit")
		}
		if in.Build != build {
			t.Errorf("create %d of %s runs build %q, want %q", i, ref, in.Build, build)
		}
		_ = m.Kill(ctx, in.ID)
	}
}

// poolClaims records every pool claim as "TEMPLATE hit|miss".
type poolClaims struct {
	deaths
	mu     sync.Mutex
	claims []string
}

func (c *poolClaims) PoolClaim(tmpl, _ string, hit bool) {
	c.mu.Lock()
	c.claims = append(c.claims, tmpl+map[bool]string{true: " hit", false: " miss"}[hit])
	c.mu.Unlock()
}

func (c *poolClaims) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.claims
	c.claims = nil
	return out
}
