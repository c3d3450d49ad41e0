package oomguard

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// QuietAfter is how long after the last byte a client sent the agent the
// guard may park, if no process but the agent is left.
const QuietAfter = 5 * time.Second

// Activity is what lets the guard park in an empty sandbox. A process the
// guard could kill exists only once the agent started one (every process of
// a sandbox descends from the agent, its PID 1), and the agent starts them
// on requests; so the guard sleeps, not waking every 25 ms, while no process
// but the agent exists and no request came in for QuietAfter, and a
// request wakes it (Wrap). Safe for concurrent use.
type Activity struct {
	last atomic.Int64 // unix nanoseconds of the last Mark
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

// quiet reports whether nothing was marked for QuietAfter.
func (a *Activity) quiet() bool {
	return time.Since(time.Unix(0, a.last.Load())) >= QuietAfter
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

// Wrap returns h marking a at the start of every request but the daemon's
// polls that cannot start a process (GET /sbx/events, /health), so the
// guard is awake before a request's handler can start a process.
func (a *Activity) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p != "/sbx/events" && p != "/health" {
			a.Mark()
		}
		h.ServeHTTP(w, r)
	})
}
