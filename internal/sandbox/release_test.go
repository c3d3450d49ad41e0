package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/failpoint"
	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestEveryEndLeavesNoResidue: each way a sandbox's host side is released
// (all through one releaseHost) leaves no runtime sandbox, layer, network,
// paused image or record behind — except a paused sandbox's record and
// image, which are what it is.
func TestEveryEndLeavesNoResidue(t *testing.T) {
	ctx := context.Background()
	create := func(t *testing.T, m *Manager, timeout time.Duration) Info {
		in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	for _, tc := range []struct {
		name       string
		run        func(t *testing.T, h *sandboxtest.Host, m *Manager)
		keepRecord bool // a paused sandbox stays recorded, with its image
	}{
		{name: "kill", run: func(t *testing.T, _ *sandboxtest.Host, m *Manager) {
			if err := m.Kill(ctx, create(t, m, time.Minute).ID); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "deadline", run: func(t *testing.T, _ *sandboxtest.Host, m *Manager) {
			in := create(t, m, 50*time.Millisecond)
			waitFor(t, func() bool { _, err := m.Get(in.ID); return errors.Is(err, ErrNotFound) })
		}},
		{name: "failed create", run: func(t *testing.T, _ *sandboxtest.Host, m *Manager) {
			failpoint.Set("create/before-init")
			defer failpoint.Set("")
			if _, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute}); err == nil {
				t.Fatal("create succeeded through its failpoint")
			}
		}},
		{name: "pause", keepRecord: true, run: func(t *testing.T, _ *sandboxtest.Host, m *Manager) {
			if err := m.Pause(ctx, create(t, m, time.Minute).ID, false); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "failed resume", keepRecord: true, run: func(t *testing.T, h *sandboxtest.Host, m *Manager) {
			in := create(t, m, time.Minute)
			if err := m.Pause(ctx, in.ID, false); err != nil {
				t.Fatal(err)
			}
			h.Mu.Lock()
			h.FailStart = errors.New("runtime broke")
			h.Mu.Unlock()
			if _, _, err := m.Connect(ctx, in.ID, time.Minute, false); err == nil {
				t.Fatal("resume succeeded on a broken runtime")
			}
			if got, err := m.Get(in.ID); err != nil || got.State != store.StatePaused {
				t.Fatalf("after a failed resume: %+v, %v; want still paused", got, err)
			}
		}},
		{name: "pause then kill", run: func(t *testing.T, _ *sandboxtest.Host, m *Manager) {
			in := create(t, m, time.Minute)
			if err := m.Pause(ctx, in.ID, false); err != nil {
				t.Fatal(err)
			}
			if err := m.Kill(ctx, in.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "reap all", run: func(t *testing.T, _ *sandboxtest.Host, m *Manager) {
			create(t, m, time.Minute)
			if err := m.Pause(ctx, create(t, m, time.Minute).ID, false); err != nil {
				t.Fatal(err)
			}
			m.Close()
			if n, err := m.ReapAll(ctx); err != nil || n != 2 {
				t.Fatalf("ReapAll = %d, %v; want 2", n, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := sandboxtest.NewHost()
			st := openStore(t, t.TempDir())
			images := t.TempDir()
			m := newTestManager(t, h, st, func(c *Config) { c.ImagesDir = images })
			tc.run(t, h, m)
			if r := h.Residue(); r != "" {
				t.Fatalf("host residue: %s", r)
			}
			recs, _ := st.List(ctx)
			ents, _ := os.ReadDir(filepath.Join(images, "paused"))
			if want := map[bool]int{true: 1, false: 0}[tc.keepRecord]; len(recs) != want || len(ents) != want {
				t.Fatalf("%d records, %d paused images; want %d", len(recs), len(ents), want)
			}
		})
	}
}

// TestReleaseGoesOnPastAFailure: a release step that fails does not stop
// the others; the record stays as reaping and the next Recover finishes
// the job (every step is idempotent).
func TestReleaseGoesOnPastAFailure(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	m := newTestManager(t, h, st)
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	busy := errors.New("layer busy")
	h.Mu.Lock()
	h.FailRemove = busy
	h.Mu.Unlock()
	if err := m.Kill(ctx, in.ID); !errors.Is(err, busy) {
		t.Fatalf("Kill = %v, want the layer's error", err)
	}
	h.Mu.Lock()
	left, layer := len(h.Running)+len(h.Nets), h.Layers[in.ID]
	h.Mu.Unlock()
	if left != 0 || !layer {
		t.Fatalf("after a failed layer remove: %s; want only the layer", h.Residue())
	}
	if rec, err := st.Get(ctx, in.ID); err != nil || rec.State != store.StateReaping {
		t.Fatalf("record = %+v, %v; want state reaping", rec, err)
	}
	m.Close()
	h.Mu.Lock()
	h.FailRemove = nil
	h.Mu.Unlock()
	if _, err := newTestManager(t, h, st).Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, _ := st.List(ctx); len(recs) != 0 || h.Residue() != "" {
		t.Fatalf("after Recover: %d records, residue %q", len(recs), h.Residue())
	}
}

// TestRecoverReapsOrphansOfEveryKind: host resources no record owns — a
// runtime sandbox, a layer, a network, alone or together — are released.
func TestRecoverReapsOrphansOfEveryKind(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	rtOnly, layerOnly, netOnly, all := NewID(), NewID(), NewID(), NewID()
	h.Mu.Lock()
	h.Running[rtOnly], h.Layers[layerOnly], h.Nets[netOnly] = true, true, true
	h.Running[all], h.Layers[all], h.Nets[all] = true, true, true
	h.Mu.Unlock()
	if n, err := newTestManager(t, h, st).Recover(ctx); err != nil || n != 0 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("orphans left: %s", r)
	}
}
