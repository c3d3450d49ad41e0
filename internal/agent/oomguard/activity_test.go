package oomguard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestActivityWrap(t *testing.T) {
	a := NewActivity()
	a.last.Store(time.Now().Add(-2 * QuietAfter).UnixNano())
	<-a.wake // NewActivity's own mark
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, tc := range []struct {
		path string
		mark bool
	}{
		{"/sbx/events", false}, // the daemon's poll
		{"/health", false},
		{"/process.Process/Start", true},
		{"/files", true},
		{"/init", true},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
		if got := !a.quiet(); got != tc.mark {
			t.Errorf("%s: marked %v, want %v", tc.path, got, tc.mark)
		}
		a.last.Store(time.Now().Add(-2 * QuietAfter).UnixNano())
		select {
		case <-a.wake:
		default:
		}
	}
}

// lonely makes the sandbox look empty for the test.
func lonely(t *testing.T) {
	alone = func() bool { return true }
	t.Cleanup(func() { alone = procAlone })
}

func TestParkWakes(t *testing.T) {
	lonely(t)
	a := NewActivity()
	a.last.Store(time.Now().Add(-2 * QuietAfter).UnixNano())
	done := make(chan bool)
	go func() { done <- park(context.Background(), a) }()
	select {
	case <-done:
		t.Fatal("park returned while quiet")
	case <-time.After(50 * time.Millisecond):
	}
	a.Mark()
	if !<-done {
		t.Fatal("park reported the end of the context")
	}
}

func TestParkNotQuiet(t *testing.T) {
	a := NewActivity() // marked now
	if !park(context.Background(), a) {
		t.Fatal("park returned false")
	}
	lonely(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if a.last.Store(0); park(ctx, a) {
		t.Fatal("park in an ended context returned true")
	}
}

func TestEmptyTicks(t *testing.T) {
	a := NewActivity()
	if n := emptyTicks(a, 1); n != 0 {
		t.Errorf("just marked: %d, want 0", n)
	}
	if n := emptyTicks(nil, 1); n != 0 {
		t.Errorf("no activity: %d, want 0 (never park)", n)
	}
	a.last.Store(0)
	if n := emptyTicks(a, 1); n != 0 {
		t.Errorf("quiet, processes on the host: %d, want 0", n)
	}
	lonely(t)
	if n := emptyTicks(a, 1); n != 2 {
		t.Errorf("quiet and alone: %d, want 2", n)
	}
}
