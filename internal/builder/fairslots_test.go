package builder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestFairSlotsRoundRobin: with one slot held, team a's three builds wait
// before team b's one; freed slots go a, b, a, a (not a, a, a, b).
func TestFairSlotsRoundRobin(t *testing.T) {
	f := newFairSlots(1)
	ctx := context.Background()
	if err := f.acquire(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 4)
	wait := func(team, name string) {
		queued := waitQueued(t, f, team)
		go func() {
			if f.acquire(ctx, team) == nil {
				got <- name
			}
		}()
		queued()
	}
	wait("a", "a1")
	wait("a", "a2")
	wait("a", "a3")
	wait("b", "b1")
	var order []string
	for range 4 {
		f.release()
		select {
		case name := <-got:
			order = append(order, name)
		case <-time.After(5 * time.Second):
			t.Fatalf("no waiter granted after %v", order)
		}
	}
	if want := []string{"a1", "b1", "a2", "a3"}; !slices.Equal(order, want) {
		t.Fatalf("grant order %v, want %v", order, want)
	}
}

// TestFairSlotsCancel: a waiter whose context ends leaves the queue and
// takes no slot; the slot freed next goes to the one behind it, and when
// all are released the slots are all free again.
func TestFairSlotsCancel(t *testing.T) {
	f := newFairSlots(1)
	if err := f.acquire(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gave := make(chan error, 1)
	queued := waitQueued(t, f, "b")
	go func() { gave <- f.acquire(ctx, "b") }()
	queued()
	cancel()
	if err := <-gave; err != context.Canceled {
		t.Fatalf("cancelled acquire: %v", err)
	}
	f.release()
	f.mu.Lock()
	free, teams := f.free, len(f.ring)
	f.mu.Unlock()
	if free != 1 || teams != 0 {
		t.Fatalf("after cancel and release: %d free, %d teams queued; want 1, 0", free, teams)
	}
}

// waitQueued returns a func that waits until team has one more waiter
// queued than now.
func waitQueued(t *testing.T, f *fairSlots, team string) func() {
	n := func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.byTeam[team]) }
	before := n()
	return func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if n() > before {
				return
			}
		}
		t.Fatalf("team %s's waiter never queued", team)
	}
}

// TestStartBuildTeamCap: a team holding maxTeamPending builds running or
// waiting gets 429 (ErrBusy) for the next, so it cannot fill the queue for
// every team.
func TestStartBuildTeamCap(t *testing.T) {
	s := gcService(t)
	ctx := context.Background()
	now := time.Now().UTC()
	if err := errors.Join(s.st.PutTemplate(ctx, &store.TemplateRec{ID: "ta", Names: []string{"ta"}, CreatedAt: now}),
		s.st.PutBuild(ctx, &store.BuildRec{ID: "ta-1", TemplateID: "ta", Status: "waiting", CreatedAt: now}),
		s.st.SetTemplateOwner(ctx, "ta", "team-a")); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	for i := range maxTeamPending {
		s.teams[fmt.Sprint("held-", i)] = "team-a"
	}
	s.mu.Unlock()
	spec := Spec{FromImage: "nowhere.invalid/x:1"}
	if err := s.StartBuild(ctx, "ta", "ta-1", spec); !errors.Is(err, sandbox.ErrBusy) {
		t.Fatalf("a team at its share of the queue: %v, want ErrBusy", err)
	}
}
