package oomguard

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// QuietAfter is how long after the last request ended (or began) the guard
// may park, if no process but the agent is left and no request is in
// flight: a short debounce, not a safety margin (requests in flight are
// counted, so a handler that starts a process late is still covered).
// It was 5 s with no in-flight count: an idle sandbox polled for 5 s after
// every request, ≈ 110 ms of CPU a time under gVisor, as much as a cold
// start's boot in a burst of creates (docs/BENCHMARKS.md, "runsc bursts");
// then 250 ms, still ≈ 10 ms of a runsc sandbox's CPU after every command.
// One poll interval is enough to let back-to-back requests keep it awake.
const QuietAfter = 25 * time.Millisecond

// Activity is what lets the guard park in an empty sandbox. A process the
// guard could kill exists only once the agent started one (every process of
// a sandbox descends from the agent, its PID 1), and the agent starts them
// while serving a request (os.StartProcess returns before the handler does)
// or inside a Begin … end span (the interpreter's kernel prewarm); so the
// guard sleeps, not waking every 25 ms, while no process but the agent
// exists, no request or span is in flight and none ended for QuietAfter, and
// the start of one wakes it (Wrap, Begin). Safe for concurrent use.
type Activity struct {
	last atomic.Int64 // unix nanoseconds of the last Mark
	busy atomic.Int64 // requests and Begin spans in flight
	wake chan struct{}
}

// NewActivity returns an Activity marked now.
func NewActivity() *Activity {
	a := &Activity{wake: make(chan struct{}, 1)}
	a.Mark()
	return a
}

// Mark records activity now and wakes a parked guard.
func (a *Activity) Mark() {
	a.last.Store(time.Now().UnixNano())
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Begin starts a span of work that may start a process: the guard is awake
// (woken if parked) and does not park until end is called (end marks again
// and is idempotent). The count goes up before the wake-up, so a guard
// about to park either sees it or gets the wake-up after its last look.
func (a *Activity) Begin() (end func()) {
	a.busy.Add(1)
	a.Mark()
	var once sync.Once
	return func() {
		once.Do(func() {
			a.Mark() // before the count drops: QuietAfter runs from here
			a.busy.Add(-1)
		})
	}
}

// quiet reports whether no request or span is in flight and nothing was
// marked for QuietAfter.
func (a *Activity) quiet() bool {
	return a.busy.Load() == 0 && time.Since(time.Unix(0, a.last.Load())) >= QuietAfter
}

// alone reports whether the sandbox holds no process but the agent
// (procAlone; tests replace it).
var alone = procAlone

// procAlone reports whether /proc lists no process but the caller (PID 1).
// procfs lists processes in pid order and a child exists before its parent
// exits, so a process forking away from the scan is still seen (pid
// wraparound aside, which two scans in a row cover).
func procAlone() bool {
	f, err := os.Open("/proc")
	if err != nil {
		return false
	}
	defer f.Close()
	self := strconv.Itoa(os.Getpid())
	for {
		names, err := f.Readdirnames(64)
		for _, n := range names {
			if _, perr := strconv.Atoi(n); perr == nil && n != self {
				return false
			}
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// Wrap returns h serving every request but the daemon's polls that cannot
// start a process (GET /sbx/events, /health) inside a Begin span, so the
// guard is awake before a request's handler can start a process and stays
// so until the handler returned.
func (a *Activity) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p != "/sbx/events" && p != "/health" {
			defer a.Begin()()
		}
		h.ServeHTTP(w, r)
	})
}
