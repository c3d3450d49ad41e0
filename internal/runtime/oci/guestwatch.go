package oci

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Raises of a guest cgroup's limit while it is out of memory: guestStep
// every guestPoll up to guestMaxRaise above the limit (inside
// sentryHeadroom), then guestStep every guestSlowPoll. Each raise wakes
// every stub waiting in the OOM: one the OOM guard (or the API) has killed
// meanwhile goes back to the Sentry and dies, a balloon gets at most about
// a step more. The slow raises keep kills getting through when the guard
// finds no victim (its processes are all small); a guest that creeps on
// to the parent's limit gets the whole Sentry OOM-killed by the host, what
// a runsc sandbox had without the guest cgroup.
const (
	guestStep     = 512 << 10
	guestMaxRaise = 32 << 20
	guestPoll     = 10 * time.Millisecond
	guestSlowPoll = time.Second
)

// guestWatch rescues one sandbox's guest cgroup from its OOM waits (see
// guestmem.go). It runs until stop is called or the cgroup is removed.
type guestWatch struct {
	dir    string // the guest cgroup
	parent string // the sandbox's memory cgroup: the agent's stub goes back there
	limit  int64
	log    *slog.Logger
	efd    int // OOM notifications (cgroup.event_control)
	stopW  int // eventfd: stop
	done   chan struct{}
	warned bool      // the slow raises were logged
	last   time.Time // the last raise
	freed  time.Time // the last freeAgent
}

// watchGuest registers for dir's OOM notifications and starts the watch.
func watchGuest(dir string, limit int64, log *slog.Logger) (*guestWatch, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("oci: eventfd: %w", err)
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(efd)
		return nil, fmt.Errorf("oci: eventfd: %w", err)
	}
	w := &guestWatch{dir: dir, parent: filepath.Dir(dir), limit: limit, log: log, efd: efd, stopW: stop, done: make(chan struct{})}
	oc, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err == nil {
		err = writeCgroup(dir, "cgroup.event_control", fmt.Sprintf("%d %d", efd, oc.Fd()))
		oc.Close() // the kernel holds its own reference
	}
	if err != nil {
		unix.Close(efd)
		unix.Close(stop)
		return nil, fmt.Errorf("oci: OOM notifications of %s: %w", dir, err)
	}
	go w.run()
	return w, nil
}

// stop ends the watch, waits for it and releases its descriptors; stopW
// stays open until then, so a watch that ended by itself (its cgroup was
// removed) is never written through a reused descriptor.
func (w *guestWatch) stop() {
	select {
	case <-w.done:
	default:
		_, _ = unix.Write(w.stopW, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		<-w.done
	}
	unix.Close(w.stopW)
}

// run waits for OOM notifications, polling every guestPoll while the limit
// is raised.
func (w *guestWatch) run() {
	defer close(w.done)
	defer unix.Close(w.efd)
	fds := []unix.PollFd{{Fd: int32(w.efd), Events: unix.POLLIN}, {Fd: int32(w.stopW), Events: unix.POLLIN}}
	for {
		timeout := -1
		if w.raised() || underOOM(w.dir) {
			timeout = int(guestPoll / time.Millisecond)
		}
		if _, err := unix.Poll(fds, timeout); err != nil && err != unix.EINTR {
			w.log.Warn("guest memory watch failed", "cgroup", w.dir, "err", err)
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		var b [8]byte
		_, _ = unix.Read(w.efd, b[:])
		if _, err := os.Stat(w.dir); err != nil {
			return // removed (the kernel notifies that too)
		}
		w.step()
	}
}

func (w *guestWatch) raised() bool {
	cur, err := readInt(filepath.Join(w.dir, "memory.limit_in_bytes"))
	return err == nil && cur > w.limit
}

// step handles the cgroup's state once: under OOM it raises the limit by
// guestStep (see guestPoll, guestSlowPoll), so the stubs waiting in their
// page faults return to the Sentry, which can then deliver the OOM guard's
// SIGKILL, and moves the agent's stub out if it is in; with usage back
// under the limit it restores the limit.
func (w *guestWatch) step() {
	cur, err1 := readInt(filepath.Join(w.dir, "memory.limit_in_bytes"))
	use, err2 := readInt(filepath.Join(w.dir, "memory.usage_in_bytes"))
	if err1 != nil || err2 != nil {
		return
	}
	if underOOM(w.dir) {
		if time.Since(w.freed) > 100*time.Millisecond {
			freeAgent(w.dir, w.parent) // the OOM guard must run
			w.freed = time.Now()
		}
		every := guestPoll
		if cur >= w.limit+guestMaxRaise {
			every = guestSlowPoll
			if !w.warned {
				w.log.Warn("guest memory stays exhausted: raising slowly up to the sandbox's limit", "cgroup", w.dir, "usageMiB", use>>20)
				w.warned = true
			}
		}
		if time.Since(w.last) >= every {
			_ = setMemoryLimit(w.dir, cur+guestStep)
			w.last = time.Now()
		}
		return
	}
	if cur > w.limit && use < w.limit {
		_ = setMemoryLimit(w.dir, w.limit)
		w.warned = false
	}
}

// underOOM reads memory.oom_control's under_oom.
func underOOM(dir string) bool {
	b, _ := os.ReadFile(filepath.Join(dir, "memory.oom_control"))
	return strings.Contains(string(b), "under_oom 1")
}
