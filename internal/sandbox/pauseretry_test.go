package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestPauseRetryPlan: a refused deadline pause is retried after 1, 2, 4,
// then 8 times the first wait, never past the window's end (the deadline
// first reached + the limit), and not at all once the window is over.
func TestPauseRetryPlan(t *testing.T) {
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first, limit := 30*time.Second, time.Hour
	for _, tc := range []struct {
		since     time.Time
		now       time.Duration // after end
		tries     int
		wantIn    time.Duration // next - now; -1: not deferred
		wantSince time.Time
	}{
		{time.Time{}, 0, 1, 30 * time.Second, end},
		{end, time.Minute, 2, time.Minute, end},
		{end, 2 * time.Minute, 3, 2 * time.Minute, end},
		{end, 5 * time.Minute, 4, 4 * time.Minute, end},
		{end, 10 * time.Minute, 9, 4 * time.Minute, end},             // capped at 8 × first
		{end, 59 * time.Minute, 9, time.Minute, end},                 // not past the window
		{end, time.Hour, 9, -1, end},                                 // the window is over
		{end.Add(-2 * time.Hour), 0, 1, -1, end.Add(-2 * time.Hour)}, // since is kept: no new window
	} {
		now := end.Add(tc.now)
		next, since, ok := PauseRetryPlan(tc.since, end, now, tc.tries, first, limit)
		if !since.Equal(tc.wantSince) || ok != (tc.wantIn >= 0) || ok && next.Sub(now) != tc.wantIn {
			t.Errorf("plan(since %v, now end+%v, try %d) = %v (in %v), since %v, %v; want in %v since %v",
				tc.since, tc.now, tc.tries, next, next.Sub(now), since, ok, tc.wantIn, tc.wantSince)
		}
	}
}

// gate is a DiskAdmit that refuses (a team's quota error) while full.
type gate struct{ full atomic.Bool }

func (g *gate) admit(context.Context, string, int64) (func(), error) {
	if g.full.Load() {
		return nil, fmt.Errorf("%w: team quota: 32 MiB of disk", ErrBusy)
	}
	return func() {}, nil
}

// sink records lifecycle events.
type sink struct {
	mu  sync.Mutex
	evs []string // what[:cause|reason]
}

func (s *sink) Event(_ string, what string, f map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, what+":"+f["cause"]+f["reason"])
}

func (s *sink) has(ev string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.evs {
		if e == ev {
			return true
		}
	}
	return false
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not %s after %v", what, within)
		}
	}
}

func stateOf(m *Manager, id string) string {
	in, err := m.Get(id)
	if err != nil {
		return "gone"
	}
	return string(in.State)
}

// TestAutoPauseDeferredAtTeamQuota: an autoPause sandbox whose deadline's
// pause its team's disk quota refuses is not killed (it was, with its
// files): it runs on, its deadline (recorded, as GET shows it) moved to the
// next try, the refusal recorded; once disk is freed it is paused at once,
// not at the next try, and resumes. A deadline the caller sets ends the
// deferral.
func TestAutoPauseDeferredAtTeamQuota(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	ev := &sink{}
	m := newTestManager(t, h, st, func(c *Config) {
		c.ImagesDir, c.Events, c.PauseRetry = t.TempDir(), ev, time.Minute
	})
	g := &gate{}
	m.SetDiskAdmission(g.admit)
	holder, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Pause(ctx, holder.ID, false); err != nil {
		t.Fatal(err)
	}
	g.full.Store(true) // the paused holder took the team to its quota
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: 50 * time.Millisecond, AutoPause: true})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "deferred", func() bool { return ev.has("pause-deferred:team_disk_quota") })
	got, err := m.Get(in.ID)
	if err != nil || got.State != store.StateRunning {
		t.Fatalf("after a refused deadline pause: %+v %v (want running)", got.State, err)
	}
	if d := time.Until(got.EndAt); d < 50*time.Second || d > time.Minute {
		t.Fatalf("endAt in %v, want the next try (in a minute)", d)
	}
	rec, err := st.Get(ctx, in.ID)
	if err != nil || !rec.EndAt.Equal(got.EndAt) || !rec.Persist.PauseDeferredSince.Equal(in.EndAt) {
		t.Fatalf("record: endAt %v deferred since %v (%v); want %v since %v", rec.EndAt, rec.Persist.PauseDeferredSince, err, got.EndAt, in.EndAt)
	}
	if ev.has("killed:timeout") {
		t.Fatal("killed")
	}

	g.full.Store(false)
	if err := m.Kill(ctx, holder.ID); err != nil { // frees the team's disk
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "paused once disk was freed", func() bool { return stateOf(m, in.ID) == "paused" })
	if rec, _ := st.Get(ctx, in.ID); !rec.Persist.PauseDeferredSince.IsZero() {
		t.Fatalf("paused record still deferred: %v", rec.Persist.PauseDeferredSince)
	}
	if _, _, err := m.Connect(ctx, in.ID, time.Minute, false); err != nil || stateOf(m, in.ID) != "running" {
		t.Fatalf("resume: %v %s", err, stateOf(m, in.ID))
	}

	// The caller's own deadline clears a deferral.
	g.full.Store(true)
	if err := m.SetTimeout(ctx, in.ID, 0); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "deferred again", func() bool {
		rec, _ := st.Get(ctx, in.ID)
		return !rec.Persist.PauseDeferredSince.IsZero()
	})
	if err := m.SetTimeout(ctx, in.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	if rec, _ := st.Get(ctx, in.ID); !rec.Persist.PauseDeferredSince.IsZero() {
		t.Fatalf("setTimeout left the deferral: %v", rec.Persist.PauseDeferredSince)
	}
}

// TestAutoPauseDeferralEnds: the retries have a ceiling: still refused
// PauseRetryFor past its deadline, the sandbox is killed, and the events
// say why; its deadline never moved past that ceiling meanwhile.
func TestAutoPauseDeferralEnds(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	ev := &sink{}
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) {
		c.ImagesDir, c.Events, c.PauseRetry, c.PauseRetryFor = t.TempDir(), ev, 20*time.Millisecond, 300*time.Millisecond
	})
	g := &gate{}
	g.full.Store(true)
	m.SetDiskAdmission(g.admit)
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: 50 * time.Millisecond, AutoPause: true})
	if err != nil {
		t.Fatal(err)
	}
	ceiling := in.EndAt.Add(300 * time.Millisecond)
	waitUntil(t, 5*time.Second, "killed", func() bool {
		if in, err := m.Get(in.ID); err == nil && in.EndAt.After(ceiling) {
			t.Fatalf("endAt %v past the ceiling %v", in.EndAt, ceiling)
		}
		return stateOf(m, in.ID) == "gone"
	})
	if time.Now().Before(ceiling) {
		t.Fatal("killed before the ceiling")
	}
	for _, e := range []string{"pause-deferred:team_disk_quota", "pause-abandoned:team_disk_quota", "killed:pause-refused"} {
		if !ev.has(e) {
			t.Errorf("no event %s in %v", e, ev.evs)
		}
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue: %s", r)
	}
}

// TestAutoPauseDeferredAtImageQuota: the node's --image-quota-mb defers
// the deadline's pause too (an API pause is ErrQuota, the sandbox running
// on); deleting the snapshot that holds the quota retries it at once.
func TestAutoPauseDeferredAtImageQuota(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	ev := &sink{}
	st := openStore(t, t.TempDir())
	m := newTestManager(t, h, st, func(c *Config) {
		c.ImagesDir, c.Events, c.PauseRetry, c.ImageQuota = t.TempDir(), ev, time.Minute, 1
	})
	if err := st.PutSnapshot(ctx, &store.Snapshot{ID: "snap1", SandboxID: "x", TemplateID: "base", Runtime: "fake", Bytes: 10}); err != nil {
		t.Fatal(err)
	}
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: 50 * time.Millisecond, AutoPause: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Pause(ctx, in.ID, false); !errors.Is(err, ErrQuota) || stateOf(m, in.ID) != "running" {
		t.Fatalf("API pause past the image quota: %v, %s (want ErrQuota, running)", err, stateOf(m, in.ID))
	}
	waitUntil(t, 5*time.Second, "deferred", func() bool { return ev.has("pause-deferred:image_quota") })
	if s := stateOf(m, in.ID); s != "running" {
		t.Fatalf("after a refused deadline pause: %s", s)
	}
	if err := m.DeleteSnapshot(ctx, "snap1"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "paused once disk was freed", func() bool { return stateOf(m, in.ID) == "paused" })
}

// TestAutoPauseOtherFailureKills: a pause failing for another reason than
// disk ends the sandbox as before (killed at its deadline).
func TestAutoPauseOtherFailureKills(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	ev := &sink{}
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) {
		c.ImagesDir, c.Events = t.TempDir(), ev
	})
	m.SetDiskAdmission(func(context.Context, string, int64) (func(), error) { return nil, errors.New("ledger broken") })
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: 50 * time.Millisecond, AutoPause: true})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "killed", func() bool { return stateOf(m, in.ID) == "gone" })
	if !ev.has("killed:timeout") || ev.has("pause-deferred:") {
		t.Fatalf("events %v", ev.evs)
	}
}

// countingGate is a gate that counts the pauses it was asked to admit.
type countingGate struct {
	gate
	asked atomic.Int32
}

func (g *countingGate) admit(ctx context.Context, team string, n int64) (func(), error) {
	g.asked.Add(1)
	return g.gate.admit(ctx, team, n)
}

// TestAutoPauseDeferralNudgesBounded: freed disk retries a deferred pause
// at most once per nudge gap, however often disk is freed (any team may
// delete things; a try at the image quota captures the sandbox).
func TestAutoPauseDeferralNudgesBounded(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	ev := &sink{}
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) {
		c.ImagesDir, c.Events, c.PauseRetry = t.TempDir(), ev, time.Minute
	})
	g := &countingGate{}
	g.full.Store(true)
	m.SetDiskAdmission(g.admit)
	if _, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: 50 * time.Millisecond, AutoPause: true}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "deferred", func() bool { return ev.has("pause-deferred:team_disk_quota") })
	for i := 0; i < 100; i++ {
		m.DiskFreed()
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if n := g.asked.Load(); n != 1 {
		t.Fatalf("%d tries after 100 nudges right after the first refusal, want 1 (none before the gap)", n)
	}
	waitUntil(t, 10*time.Second, "tried after the gap", func() bool { return g.asked.Load() == 2 })
	time.Sleep(200 * time.Millisecond)
	if n := g.asked.Load(); n != 2 {
		t.Fatalf("%d tries after the gap, want 2", n)
	}
}

// TestAutoPauseDeferralSurvivesRestart: a restarted daemon keeps a
// deferred sandbox running, deferred (its window unchanged), and pauses it
// once disk is freed.
func TestAutoPauseDeferralSurvivesRestart(t *testing.T) {
	h, st, cfg, g, in, _ := deferredThenDown(t)
	restartDeferred(t, h, st, cfg, g, in)
}

// TestAutoPauseDeferralSurvivesLongRestart: a deferred sandbox whose next
// try fell due while the daemon was down is not reaped as expired: the
// restarted daemon tries the pause at once (the deadline recorded is a
// retry's, not the end of the sandbox's time). It was reaped, its files
// lost, whenever the restart took longer than the retry's wait.
func TestAutoPauseDeferralSurvivesLongRestart(t *testing.T) {
	h, st, cfg, g, in, rec := deferredThenDown(t)
	time.Sleep(time.Until(rec.EndAt) + 100*time.Millisecond) // down past the recorded retry
	restartDeferred(t, h, st, cfg, g, in)
}

// deferredThenDown creates an autoPause sandbox whose deadline's pause is
// refused for want of disk (g full), waits for the deferral to be recorded
// and closes the manager: the daemon is down. It returns what a restart
// needs and the deferred record (its EndAt is the next try).
func deferredThenDown(t *testing.T) (*sandboxtest.Host, *store.Store, func(*Config), *gate, Info, store.Sandbox) {
	t.Helper()
	ctx := context.Background()
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	images := t.TempDir()
	cfg := func(c *Config) { c.ImagesDir, c.PauseRetry = images, 100*time.Millisecond }
	g := &gate{}
	g.full.Store(true)
	m1 := newTestManager(t, h, st, cfg)
	m1.SetDiskAdmission(g.admit)
	in, err := m1.Create(ctx, CreateOpts{Template: "base", Timeout: 50 * time.Millisecond, AutoPause: true})
	if err != nil {
		t.Fatal(err)
	}
	var rec store.Sandbox
	waitUntil(t, 5*time.Second, "deferred", func() bool {
		r, err := st.Get(ctx, in.ID)
		if err != nil || r.Persist.PauseDeferredSince.IsZero() {
			return false
		}
		rec = *r
		return true
	})
	m1.Close()
	return h, st, cfg, g, in, rec
}

// restartDeferred starts a manager over st after one whose sandbox in's
// deadline's pause was deferred: in is adopted, runs on still deferred
// since its first deadline while the disk stays full, and is paused once
// it is not.
func restartDeferred(t *testing.T, h *sandboxtest.Host, st *store.Store, cfg func(*Config), g *gate, in Info) {
	t.Helper()
	ctx := context.Background()
	m2 := newTestManager(t, h, st, cfg)
	m2.SetDiskAdmission(g.admit)
	if n, err := m2.Recover(ctx); err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want the deferred sandbox adopted", n, err)
	}
	time.Sleep(300 * time.Millisecond) // tries made and refused
	rec, err := st.Get(ctx, in.ID)
	if err != nil {
		t.Fatalf("the deferred sandbox's record after a restart: %v", err)
	}
	if s := stateOf(m2, in.ID); s != "running" || !rec.Persist.PauseDeferredSince.Equal(in.EndAt) {
		t.Fatalf("after a restart: %s, deferred since %v (want running, since %v)", s, rec.Persist.PauseDeferredSince, in.EndAt)
	}
	g.full.Store(false)
	waitUntil(t, 5*time.Second, "paused", func() bool { return stateOf(m2, in.ID) == "paused" })
}
