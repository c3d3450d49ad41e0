package oci

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// guestWatches holds the running guest memory watches by sandbox id; mu
// guards the map only (watches start and stop outside it).
type guestWatches struct {
	mu sync.Mutex
	m  map[string]*guestWatch
}

func (g *guestWatches) swap(id string, w *guestWatch) *guestWatch {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.m[id]
	if g.m == nil {
		g.m = map[string]*guestWatch{}
	}
	if w == nil {
		delete(g.m, id)
	} else {
		g.m[id] = w
	}
	return old
}

func (g *guestWatches) has(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[id] != nil
}

// guardGuest gives the runsc sandbox id (Sentry pid sentry) its guest
// cgroup and watch (after a create or restore, and when a restarted daemon
// loads it). Where that fails, the sandbox runs as without it (one host
// cgroup; a balloon then costs the whole sandbox) and the failure is logged.
// On a pure cgroup v2 host it only makes room for the layer's files.
func (r *Runtime) guardGuest(id string, sentry int) {
	if err := r.roomForFiles(id); err != nil {
		r.cfg.Log.Warn("no room for files in the sandbox's memory cgroup: its files count against its memory", "sandbox", id, "err", err)
	}
	if !r.guestSplit() || sentry <= 0 || r.guests.has(id) {
		return
	}
	limit, err := r.splitGuest(id, sentry)
	var w *guestWatch
	if err == nil {
		w, err = watchGuest(filepath.Join(r.memoryCgroup(id), guestDir), limit, r.cfg.Log)
	}
	if err != nil {
		r.cfg.Log.Warn("guest memory cgroup unavailable: an out-of-memory guest costs the whole sandbox", "sandbox", id, "err", err)
		return
	}
	if old := r.guests.swap(id, w); old != nil {
		old.stop()
	}
}

// releaseGuest stops id's watch and moves its stubs back into the parent
// cgroup so that the runtime's delete can remove it (runsc retries a busy
// cgroup for 5 s, and a child keeps it busy); reapCgroups removes what is
// left. Bounded to about a second.
func (r *Runtime) releaseGuest(id string) {
	if w := r.guests.swap(id, nil); w != nil {
		w.stop()
	}
	if r.kind != "runsc" || r.v2 {
		return
	}
	parent := r.memoryCgroup(id)
	guest := filepath.Join(parent, guestDir)
	for i := 0; i < 100; i++ {
		for _, pid := range cgroupProcs(guest) {
			_ = writeCgroup(parent, "cgroup.procs", strconv.Itoa(pid))
		}
		err := syscall.Rmdir(guest)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return
		}
		if _, serr := os.Stat(guest); serr != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
