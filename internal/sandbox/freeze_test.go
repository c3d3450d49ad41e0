package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
)

// A sandbox's files are copied (a build step's layer, a files-only pause)
// only while it is frozen, and thawed after; one that cannot be frozen is
// not copied at all (the copy runs as host root on a tree the sandbox
// writes: integration TestBuildCopyNotLive). Before, SaveFiles copied a
// running sandbox and a files-only pause copied on when the freeze failed.
func TestCopyOnlyFrozen(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	images := t.TempDir()
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) { c.ImagesDir = images })
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveFiles(ctx, in.ID, filepath.Join(t.TempDir(), "step")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Copies, []bool{true}) || len(h.Frozen) != 0 {
		t.Fatalf("SaveFiles: copies frozen %v, still frozen %v; want one frozen copy, then thawed", h.Copies, h.Frozen)
	}
	h.FailPause = errors.New("freezer: device busy")
	dst := filepath.Join(t.TempDir(), "step2")
	if err := m.SaveFiles(ctx, in.ID, dst); err == nil {
		t.Fatal("SaveFiles of a sandbox that cannot be frozen succeeded")
	}
	if err := m.Pause(ctx, in.ID, false); err == nil {
		t.Fatal("a files-only pause of a sandbox that cannot be frozen succeeded")
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) || len(h.Copies) != 1 {
		t.Fatalf("copied without a freeze: %v, copies %v", err, h.Copies)
	}
	if got, _ := m.Get(in.ID); got.State != store.StateRunning {
		t.Fatalf("after the refused copies the sandbox is %q, want running", got.State)
	}
	h.FailPause = nil
	if err := m.Pause(ctx, in.ID, false); err != nil || !slices.Equal(h.Copies, []bool{true, true}) {
		t.Fatalf("files-only pause: %v, copies frozen %v", err, h.Copies)
	}
}
