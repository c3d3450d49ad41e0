package runtimetest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// testPause: on backends whose sandboxes are runtime.Pausers, Pause stops
// every process in place and Resume lets them continue.
func testPause(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	ctx := context.Background()
	s, rootfs := fx.spec(t, rt, counter, runtime.Limits{})
	sb := create(t, rt, s)
	p, ok := sb.(runtime.Pauser)
	if !ok {
		t.Skip(rt.Name() + " sandboxes cannot pause")
	}
	waitCount(t, rootfs, 5)
	if err := p.Pause(ctx); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	a := readCount(rootfs)
	time.Sleep(300 * time.Millisecond)
	if b := readCount(rootfs); b > a+1 {
		t.Fatalf("counter went from %d to %d while paused", a, b)
	}
	if err := p.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	waitCount(t, rootfs, a+5)
}

// testFork: on backends with Capabilities.Checkpoint, a sandbox frozen,
// checkpointed with leaveRunning and its writable layer copied can be
// restored under another id, rootfs and network while it runs on; both
// continue from the count at the checkpoint (sbx's fork and snapshots).
func testFork(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	if !rt.Capabilities().Checkpoint {
		t.Skip(rt.Name() + " has no checkpoint")
	}
	ctx := context.Background()
	s, rootfs := fx.spec(t, rt, counter, runtime.Limits{})
	sb := create(t, rt, s)
	waitCount(t, rootfs, 5)
	img := t.TempDir()
	p := sb.(runtime.Pauser)
	if err := p.Pause(ctx); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if err := sb.(runtime.Checkpointer).Checkpoint(ctx, filepath.Join(img, "mem"), true); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	at := readCount(rootfs)
	if err := fx.Layers.SaveUpper(ctx, s.ID, filepath.Join(img, "upper")); err != nil {
		t.Fatalf("SaveUpper: %v", err)
	}
	if err := p.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	cs, crootfs := fx.specFrom(t, rt, counter, runtime.Limits{}, filepath.Join(img, "upper"))
	if got := readCount(crootfs); got != at {
		t.Fatalf("child's layer has count %d, want %d (the checkpoint's)", got, at)
	}
	child, err := rt.(runtime.Restorer).Restore(ctx, cs, filepath.Join(img, "mem"))
	if err != nil {
		t.Fatalf("Restore as %s: %v", cs.ID, err)
	}
	t.Cleanup(func() {
		if err := child.Delete(context.Background()); err != nil {
			t.Errorf("child Delete: %v", err)
		}
		CheckNoResidue(t, rt, child, crootfs)
	})
	waitCount(t, crootfs, at+5)
	waitCount(t, rootfs, at+5)
}
