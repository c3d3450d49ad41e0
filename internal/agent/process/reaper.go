package process

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// reaper collects the exit statuses of the processes the agent starts. It
// replaces exec.Cmd.Wait: one goroutine, woken by SIGCHLD, calls wait4 and
// hands each status to the callback registered for that pid.
//
// In "reap all" mode (the agent is PID 1 of its sandbox, or a child
// subreaper) it waits for any child, wait4(-1), so orphans re-parented to the
// agent (double-forked daemons, background jobs of exited shells) never stay
// zombies; statuses of pids nobody registered are dropped. Otherwise it waits
// only for the registered pids, leaving other children of the process alone
// (tests, a debug agent that is not a subreaper).
//
// A status is never lost: spawn forks while holding mu, so a child cannot be
// reaped before its callback is registered. There is one reaper per process,
// shared by every Service, because wait4(-1) would otherwise steal statuses
// from a second reaper.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]func(unix.WaitStatus)
	all     bool
	started bool
}

var theReaper = &reaper{waiting: map[int]func(unix.WaitStatus){}}

// EnableSubreaper makes the calling process a child subreaper (unless it is
// already PID 1), so orphaned descendants are re-parented to it, and switches
// the reaper to reap every child. Call it once at agent start-up, before any
// process is started, and only in a program that runs no other children with
// exec.Cmd.Wait.
func EnableSubreaper() error {
	if os.Getpid() != 1 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return err
		}
	}
	theReaper.mu.Lock()
	theReaper.all = true
	theReaper.mu.Unlock()
	return nil
}

// spawn runs start (which forks and returns the child's pid) with the reaper
// locked, and registers onExit for the child. onExit runs on the reaper's
// goroutine, with the reaper locked: it must not block or call the reaper.
func (r *reaper) spawn(start func() (int, error), onExit func(unix.WaitStatus)) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		r.started = true
		if os.Getpid() == 1 {
			r.all = true
		}
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGCHLD)
		go r.loop(ch)
	}
	pid, err := start()
	if err != nil {
		return 0, err
	}
	r.waiting[pid] = onExit
	return pid, nil
}

func (r *reaper) loop(ch <-chan os.Signal) {
	for range ch {
		r.reap()
	}
}

// reap collects every status that is ready.
func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.all {
		for {
			pid, ws, err := wait4(-1)
			if pid <= 0 || err != nil {
				return
			}
			r.dispatch(pid, ws)
		}
	}
	for pid := range r.waiting {
		if got, ws, err := wait4(pid); err == nil && got == pid {
			r.dispatch(pid, ws)
		} else if errors.Is(err, unix.ECHILD) {
			// Reaped by someone else (should not happen): report it as killed
			// rather than leaving the stream hanging forever.
			r.dispatch(pid, unix.WaitStatus(unix.SIGKILL))
		}
	}
}

func (r *reaper) dispatch(pid int, ws unix.WaitStatus) {
	if cb, ok := r.waiting[pid]; ok {
		delete(r.waiting, pid)
		cb(ws)
	}
}

// wait4 is a non-blocking wait4 that retries on EINTR.
func wait4(pid int) (int, unix.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		return got, ws, err
	}
}
