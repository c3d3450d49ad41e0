package api

import (
	"net/url"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestWireState: E2B's state field is "paused" for a paused sandbox and
// "running" for every other state a live sandbox can be in.
func TestWireState(t *testing.T) {
	for st, want := range map[store.State]string{
		store.StateRunning: "running",
		store.StatePausing: "running", // runs until its image is complete
		store.StatePaused:  "paused",
	} {
		if got := wireState(st); got != want {
			t.Errorf("wireState(%s) = %q, want %q", st, got, want)
		}
	}
}

// TestListStateFilter: the list filter matches the wire state, so a
// sandbox being paused is listed as running.
func TestListStateFilter(t *testing.T) {
	infos := map[store.State]sandbox.Info{}
	for _, st := range []store.State{store.StateRunning, store.StatePausing, store.StatePaused} {
		infos[st] = sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: st}}
	}
	for _, tc := range []struct {
		filter string
		match  map[store.State]bool
	}{
		{"running", map[store.State]bool{store.StateRunning: true, store.StatePausing: true}},
		{"paused", map[store.State]bool{store.StatePaused: true}},
		{"running,paused", map[store.State]bool{store.StateRunning: true, store.StatePausing: true, store.StatePaused: true}},
		{"", map[store.State]bool{store.StateRunning: true, store.StatePausing: true, store.StatePaused: true}},
	} {
		lq, err := parseListQuery(url.Values{"state": {tc.filter}})
		if err != nil {
			t.Fatal(err)
		}
		for st, in := range infos {
			if got := lq.match(in); got != tc.match[st] {
				t.Errorf("state=%s: match(%s) = %v", tc.filter, st, got)
			}
		}
	}
	// The Python SDK repeats the parameter: every value counts.
	lq, err := parseListQuery(url.Values{"state": {"running", "paused"}})
	if err != nil || !lq.match(infos[store.StatePaused]) || !lq.match(infos[store.StateRunning]) {
		t.Errorf("state=running&state=paused: %v, matches paused %v, running %v; want both", err,
			lq.match(infos[store.StatePaused]), lq.match(infos[store.StateRunning]))
	}
	if _, err := parseListQuery(url.Values{"state": {"running", "dead"}}); err == nil {
		t.Error("state=running&state=dead accepted")
	}
	for _, bad := range []string{"pausing", "creating", "Running", "running,"} {
		if _, err := parseListQuery(url.Values{"state": {bad}}); err == nil {
			t.Errorf("state=%q accepted", bad)
		}
	}
}

// TestPausedEndAt: a paused sandbox's endAt (getInfo, list) is when it was
// paused, as E2B's, not the deadline it had while running.
func TestPausedEndAt(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: store.StateRunning,
		StartedAt: start, EndAt: start.Add(time.Hour)}}
	if got := listed(in).EndAt; !got.Equal(in.EndAt) {
		t.Errorf("running: endAt %v, want its deadline %v", got, in.EndAt)
	}
	in.State, in.Persist.PausedAt = store.StatePaused, start.Add(time.Minute)
	if got := listed(in).EndAt; !got.Equal(in.Persist.PausedAt) {
		t.Errorf("paused: endAt %v, want the pause %v", got, in.Persist.PausedAt)
	}
}
