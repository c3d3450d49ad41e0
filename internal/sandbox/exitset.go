package sandbox

import "sync"

// exitSet gathers the init pids whose end woke the watchdog since it last
// looked, or "all of them" (a sweep). Its lock is its own: a pidfd's
// goroutine adds to it without Manager.mu.
type exitSet struct {
	mu    sync.Mutex
	pids  map[int]bool
	sweep bool
}

// add has the next look check pid.
func (e *exitSet) add(pid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pids == nil {
		e.pids = map[int]bool{}
	}
	e.pids[pid] = true
}

// all has the next look check every init.
func (e *exitSet) all() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sweep = true
}

// take returns what the next look checks and empties the set: nil means
// every init (a sweep was asked for, or nothing was named: a wake without
// a pid checks all, as before pids were kept).
func (e *exitSet) take() map[int]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	pids, sweep := e.pids, e.sweep
	e.pids, e.sweep = nil, false
	if sweep || len(pids) == 0 {
		return nil
	}
	return pids
}
