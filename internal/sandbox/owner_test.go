package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
)

// TestOwnedAcrossPaths: a sandbox is its creator's team's whether it came
// from a warm pool or a cold start (fork children: integration
// TestTeamsForkAndRestart); another team's id and an unknown one give the
// same error.
func TestOwnedAcrossPaths(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := sandboxtest.NewHost()
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) {
		c.Pools = map[PoolKey]int{{Template: "base", Runtime: "fake"}: 1}
	})
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return m.PoolStats()[PoolKey{"base", "fake"}] == 1 })
	pooled, err := m.Create(ctx, CreateOpts{Team: "team-a", Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cold, err := m.Create(ctx, CreateOpts{Team: "team-a", Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []Info{pooled, cold} {
		if in.Team != "team-a" {
			t.Errorf("%s: team %q", in.ID, in.Team)
		}
		if _, err := m.Owned("team-a", in.ID); err != nil {
			t.Errorf("owner: %v", err)
		}
		_, other := m.Owned("team-b", in.ID)
		_, none := m.Owned("team-b", "zzzzzzzzzzzzzzzzzzzz")
		if !errors.Is(other, ErrNotFound) || other.Error()[len(in.ID):] != none.Error()[len(in.ID):] {
			t.Errorf("another team: %v; unknown: %v", other, none)
		}
		if _, err := m.Owned("", in.ID); err == nil {
			t.Error("the default team owns team-a's sandbox")
		}
	}
}
