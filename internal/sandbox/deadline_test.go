package sandbox_test

import (
	"context"
	"testing"
	"time"

	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
)

// TestDeadlineIgnoresWallClockStep: a sandbox lives the span it was given,
// however the wall clock steps meanwhile. Its deadline was checked against
// the wall clock: a forward step (NTP, this CI machine's VM resumed and its
// clock reset) ended sandboxes early; TestDeadline saw it under load, a
// sandbox gone 0.6 s after SetTimeout(1s) (2 runs in 200).
func TestDeadlineIgnoresWallClockStep(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	m := newTestManager(t, h, openStore(t, t.TempDir()))
	for _, set := range []bool{false, true} { // the create's deadline, then one SetTimeout moved
		in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if set {
			if err := m.SetTimeout(ctx, in.ID, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		m.StepWallClock(in.ID, 2*time.Minute)
		m.ExpireNow(in.ID)
		if _, err := m.Get(in.ID); err != nil {
			t.Fatalf("SetTimeout moved: %v: a wall clock step ended the sandbox: %v", set, err)
		}
	}
}
