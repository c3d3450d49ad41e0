package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
)

// A create whose runtime command timed out answers at once (503) and is
// reaped behind the answer: a hung runtime would hang the cleanup too.
func TestCreateRuntimeTimeoutReapsBehind(t *testing.T) {
	h := sandboxtest.NewHost()
	h.FailStart = fmt.Errorf("crun run: %w", runtime.ErrTimeout)
	h.RemoveDelay = 2 * time.Second
	m := newTestManager(t, h, openStore(t, t.TempDir()))
	t0 := time.Now()
	_, err := m.Create(context.Background(), CreateOpts{Template: "base", Timeout: time.Minute})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, runtime.ErrTimeout) {
		t.Fatalf("create = %v, want ErrUnavailable wrapping the timeout", err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("create answered after %v: it waited for the cleanup", d)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.Residue() != "" {
		if time.Now().After(deadline) {
			t.Fatalf("not reaped behind the answer: %s", h.Residue())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
