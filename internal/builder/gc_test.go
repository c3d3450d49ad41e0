package builder

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template"
	"github.com/sbx-dev/sbx/internal/template/layers"
)

// gcService is a Service over fakes whose layer store is owned by "me".
func gcService(t *testing.T) *Service {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := &Registry{Builtins: &template.Store{Dir: filepath.Join(dir, "templates")}, Store: st,
		Layers: &layers.Store{Dir: filepath.Join(dir, "layers"), Owner: "me"}}
	h := sandboxtest.NewHost()
	cfg := sandbox.Config{DefaultRuntime: "fake", AgentPort: sandboxtest.StartAgent(t), DefaultTimeout: time.Minute, MaxTimeout: time.Hour,
		Defaults: sandbox.Resources{CPUCount: 1, MemoryMB: 256, DiskSizeMB: 256, Pids: 100}, Max: sandbox.Resources{CPUCount: 2, MemoryMB: 512, DiskSizeMB: 512}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := sandbox.New(cfg, st, sandbox.Runtimes{"fake": sandboxtest.NewRuntime(h)}, h, sandboxtest.NewLayers(h), reg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	s := New(Config{DataDir: dir, TmpDir: filepath.Join(dir, "tmp"), GCGrace: time.Nanosecond}, reg, m, st, nil, log)
	t.Cleanup(s.Close)
	return s
}

// testLayer makes a layer of key used by this daemon and returns its id.
func (s *Service) testLayer(t *testing.T, key string) string {
	t.Helper()
	if _, err := s.reg.Layers.Ensure(context.Background(), key, func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "f"), []byte(key), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	id, _ := layers.ID(key)
	if err := s.reg.Layers.Use(id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestGCFreesWhatNothingUses(t *testing.T) {
	s := gcService(t)
	ctx := context.Background()
	kept := s.testLayer(t, hashKey("kept"))
	loose := s.testLayer(t, hashKey("loose"))
	shared := s.testLayer(t, hashKey("shared"))
	other := &layers.Store{Dir: s.reg.Layers.Dir, Owner: "another-daemon"}
	if err := other.Use(shared); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := errors.Join(s.st.PutTemplate(ctx, &store.TemplateRec{ID: "t1", Names: []string{"one"}, CreatedAt: now}),
		s.st.PutBuild(ctx, &store.BuildRec{ID: "b1", TemplateID: "t1", Status: "ready", Layers: []string{kept}, CreatedAt: now}),
		s.st.PutTag(ctx, store.TagRec{TemplateID: "t1", Tag: "latest", BuildID: "b1", CreatedAt: now}), s.reg.Reload(ctx)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	if !s.reg.Layers.Has(kept) || s.reg.Layers.Has(loose) || !s.reg.Layers.Has(shared) {
		t.Fatalf("after GC: kept %v, loose %v, shared %v (want true false true)", s.reg.Layers.Has(kept), s.reg.Layers.Has(loose), s.reg.Layers.Has(shared))
	}
	// A sandbox on the build keeps it (and its layers) after the template goes.
	in, err := s.mgr.Create(ctx, sandbox.CreateOpts{Template: "one", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.st.DeleteTemplate(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.Build(ctx, "b1"); err != nil || !s.reg.Layers.Has(kept) {
		t.Fatalf("an orphan build a sandbox runs on was collected: %v", err)
	}
	if err := s.mgr.Kill(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.Build(ctx, "b1"); err == nil || s.reg.Layers.Has(kept) {
		t.Fatalf("the orphan build or its layer outlived its last sandbox: %v", err)
	}
}
