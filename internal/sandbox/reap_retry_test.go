package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestReapRetriedShortOfDescriptors: a kill whose runtime delete and layer
// remove fail for want of file descriptors (EMFILE, as `runsc delete:
// pipe2: too many open files` when a tenant took the daemon to its limit)
// is retried once descriptors are back: the sandbox's processes end, its
// host resources and record go, without a daemon restart. Before, the
// processes ran on, the record kept as reaping, until the next start.
func TestReapRetriedShortOfDescriptors(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	m := newTestManager(t, h, st, func(c *Config) { c.ReapRetry = 10 * time.Millisecond })
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	emfile := fmt.Errorf("runsc delete: pipe2: %w", syscall.EMFILE)
	h.Mu.Lock()
	h.FailDelete, h.FailRemove = emfile, fmt.Errorf("unmount: %w", syscall.EMFILE)
	h.Mu.Unlock()
	if err := m.Kill(ctx, in.ID); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Kill = %v, want EMFILE", err)
	}
	if rec, err := st.Get(ctx, in.ID); err != nil || rec.State != store.StateReaping {
		t.Fatalf("record = %+v, %v; want state reaping", rec, err)
	}
	time.Sleep(50 * time.Millisecond) // a few retries, still short
	h.Mu.Lock()
	h.FailDelete, h.FailRemove = nil, nil
	h.Mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, gerr := st.Get(ctx, in.ID)
		if errors.Is(gerr, store.ErrNotFound) && h.Residue() == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after descriptors came back: record %v, residue %q", gerr, h.Residue())
		}
	}
}

// TestReapNotRetriedOtherwise: a failure that is not a descriptor
// shortage is left for the next Recover (TestReleaseGoesOnPastAFailure),
// not retried in a loop.
func TestReapNotRetriedOtherwise(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	m := newTestManager(t, h, st, func(c *Config) { c.ReapRetry = 10 * time.Millisecond })
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	h.Mu.Lock()
	h.FailRemove = errors.New("layer busy")
	h.Mu.Unlock()
	_ = m.Kill(ctx, in.ID)
	h.Mu.Lock()
	h.FailRemove = nil
	h.Mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	if rec, err := st.Get(ctx, in.ID); err != nil || rec.State != store.StateReaping {
		t.Fatalf("record = %+v, %v; want state reaping until Recover", rec, err)
	}
}
