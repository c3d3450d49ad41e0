package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/failpoint"
	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
)

// TestCreateWaitsForSlowAgent: an agent that answered /health but does not
// take /init at once (its connections fail a few times, as under load) is
// asked again: the create succeeds.
func TestCreateWaitsForSlowAgent(t *testing.T) {
	failpoint.Set("create/init-unreachable=error3")
	defer failpoint.Set("")
	h := sandboxtest.NewHost()
	m := newTestManager(t, h, openStore(t, t.TempDir()))
	in, err := m.Create(context.Background(), CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatalf("create with an agent slow to take /init: %v", err)
	}
	if in.State != "running" {
		t.Fatalf("created %+v", in)
	}
}

// TestCreateAgentNeverReachable: an agent that never takes /init within the
// create's deadline fails the create as ErrUnavailable (the API's retryable
// 503), and leaves nothing behind.
func TestCreateAgentNeverReachable(t *testing.T) {
	failpoint.Set("create/init-unreachable")
	defer failpoint.Set("")
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	m := newTestManager(t, h, st)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, failpoint.ErrInjected) {
		t.Fatalf("err = %v, want ErrUnavailable wrapping the transport failure", err)
	}
	if d := time.Since(t0); d < 400*time.Millisecond || d > 5*time.Second {
		t.Fatalf("gave up after %v, want about the create's deadline", d)
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue: %s", r)
	}
	if recs, _ := st.List(context.Background()); len(recs) != 0 {
		t.Fatalf("%d records left", len(recs))
	}
}
