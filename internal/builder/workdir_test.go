package builder

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sbx-dev/sbx/internal/store"
)

// TestWorkdirFailsAtItsStep: a working directory the template's user may
// not make fails the build with E2B's wording (its WORKDIR step's "failed to
// create workdir: <status>"), on the WORKDIR step that set it, though sbx
// makes it when a later step first needs it; other failures stay on their
// own step. Before, root made it and gave it to the user: no failure.
func TestWorkdirFailsAtItsStep(t *testing.T) {
	s := &Service{}
	st := &state{}
	st.startRun("", "")
	if err := s.step(context.Background(), &store.BuildRec{ID: "b"}, &buildLog{}, "2", st, Step{Type: "WORKDIR", Args: []string{"/opt/x"}}, false); err != nil {
		t.Fatal(err)
	}
	err := workdirFailed(errors.New("exit status 1"))
	if err.Error() != "failed to create workdir: exit status 1" {
		t.Fatalf("wording %q", err)
	}
	if got := reasonText(fmt.Errorf("layer 695c8719: %w", err)); got != "failed to create workdir: exit status 1" {
		t.Errorf("the build's reason %q, want E2B's words alone", got)
	}
	if got := st.failedStep("3", err); got != "2" {
		t.Errorf("a workdir failure in step 3 is put on %q, want the WORKDIR step 2", got)
	}
	if got := st.failedStep("finalize", err); got != "2" {
		t.Errorf("a workdir failure at finalize is put on %q, want 2", got)
	}
	if got := st.failedStep("3", errors.New("exit status 1")); got != "3" {
		t.Errorf("a RUN failure in step 3 is put on %q", got)
	}
	inherited := &state{}
	inherited.startRun("app", "/app")
	if got := inherited.failedStep("1", err); got != "1" {
		t.Errorf("a parent's workdir failing in step 1 is put on %q", got)
	}
}
