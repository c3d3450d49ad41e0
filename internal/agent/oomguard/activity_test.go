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
		if n := a.busy.Load(); n != 0 {
			t.Errorf("%s: %d in flight after the request, want 0", tc.path, n)
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

// TestActivityInFlight: a request in flight keeps the guard from parking
// however long ago it began; once it ended the guard may park after
// QuietAfter, not before.
func TestActivityInFlight(t *testing.T) {
	a := NewActivity()
	inside := make(chan struct{})
	release := make(chan struct{})
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(inside)
		<-release
	}))
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/process.Process/Start", nil))
		close(done)
	}()
	<-inside
	a.last.Store(time.Now().Add(-2 * QuietAfter).UnixNano()) // began long ago
	if a.quiet() {
		t.Fatal("quiet with a request in flight")
	}
	ending := time.Now().UnixNano()
	close(release)
	<-done
	if last := a.last.Load(); last < ending {
		t.Fatalf("the request's end was not marked (last %d, ended after %d): QuietAfter must run from the end", last, ending)
	}
	time.Sleep(QuietAfter + 10*time.Millisecond)
	if !a.quiet() {
		t.Fatal("not quiet QuietAfter after the last request ended")
	}
}

// TestBeginWakesAndHolds: Begin wakes a parked guard and holds it awake
// until end; end is idempotent.
func TestBeginWakesAndHolds(t *testing.T) {
	lonely(t)
	a := NewActivity()
	a.last.Store(time.Now().Add(-2 * QuietAfter).UnixNano())
	done := make(chan bool)
	go func() { done <- park(context.Background(), a) }()
	time.Sleep(20 * time.Millisecond)
	end := a.Begin()
	if !<-done {
		t.Fatal("park reported the end of the context")
	}
	a.last.Store(time.Now().Add(-2 * QuietAfter).UnixNano())
	if a.quiet() || emptyTicks(a, 5) != 0 {
		t.Fatal("quiet inside a Begin span")
	}
	end()
	end()
	if n := a.busy.Load(); n != 0 {
		t.Fatalf("busy %d after end twice, want 0", n)
	}
	a.last.Store(time.Now().Add(-2 * QuietAfter).UnixNano())
	if !a.quiet() {
		t.Fatal("not quiet after the span ended and QuietAfter passed")
	}
}

// TestParkRacesBegin: a span begun at any point around park's last look
// never leaves the guard parked while the span is in flight.
func TestParkRacesBegin(t *testing.T) {
	lonely(t)
	for i := 0; i < 200; i++ {
		a := NewActivity()
		a.last.Store(time.Now().Add(-2 * QuietAfter).UnixNano())
		done := make(chan bool, 1)
		go func() { done <- park(context.Background(), a) }()
		end := a.Begin()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the guard stayed parked with a span in flight", i)
		}
		end()
	}
}
