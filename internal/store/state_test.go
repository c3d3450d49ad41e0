package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseState(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want State
		ok   bool
	}{
		{"creating", StateCreating, true},
		{"pooled", StatePooled, true},
		{"running", StateRunning, true},
		{"pausing", StatePausing, true},
		{"paused", StatePaused, true},
		{"reaping", StateReaping, true},
		{"lost", StateLost, true},
		{"", "", false},
		{"Running", "", false},
		{"killed", "", false},
		{"running ", "", false},
	} {
		got, err := ParseState(tc.in)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseState(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadState) {
			t.Errorf("ParseState(%q) error %v does not wrap ErrBadState", tc.in, err)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("%q.String() = %q", got, got.String())
		}
	}
}

// TestPutRefusesUnknownState: nothing is written for a record whose state
// is not a State.
func TestPutRefusesUnknownState(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, st := range []State{"", "frozen"} {
		if err := s.Put(ctx, &Sandbox{ID: "x", State: st}); !errors.Is(err, ErrBadState) {
			t.Fatalf("Put state %q = %v, want ErrBadState", st, err)
		}
	}
	if _, err := s.Get(ctx, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused record was written: %v", err)
	}
}

// TestUnknownStateFromDB: a stored record in a state this build does not
// know (a newer daemon's, a hand edit) is a clear error naming the record,
// from Get and from List, never a record read as something else.
func TestUnknownStateFromDB(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(ctx, &Sandbox{ID: "ok", State: StateRunning}); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"id":"bad","state":"hibernating"}`, `{"id":"bad"}`} {
		if _, err := s.db.ExecContext(ctx, `INSERT OR REPLACE INTO sandboxes(id, state, template, started_at, end_at, doc) VALUES('bad','x','t',0,0,?)`, doc); err != nil {
			t.Fatal(err)
		}
		_, gerr := s.Get(ctx, "bad")
		_, lerr := s.List(ctx)
		for what, err := range map[string]error{"Get": gerr, "List": lerr} {
			if !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), "bad") {
				t.Errorf("%s of %s = %v, want ErrBadState naming the record", what, doc, err)
			}
		}
	}
	if got, err := s.Get(ctx, "ok"); err != nil || got.State != StateRunning {
		t.Fatalf("Get ok = %+v, %v", got, err)
	}
}
