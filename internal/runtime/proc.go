package runtime

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcessAlive reports whether host pid exists and has not exited (a zombie,
// or a task its parent has reaped but the kernel not yet released, whose
// state reads 'X': a pidfd's exit wakes the watchdog before either ends, and
// a waiting parent can reap it in between). Backends
// use it where a runtime's own state is stale (runsc after an OOM-killed
// Sentry); the manager's watchdog uses it to find sandboxes whose init died.
// Only the pid's absence is death: a read that fails otherwise (the daemon
// out of descriptors or memory: EMFILE, ENFILE, ENOMEM) says nothing about
// the process, which is then reported alive (the watchdog asks again), so a
// daemon short of descriptors never takes its live sandboxes for dead ones.
func ProcessAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ESRCH)
	}
	return !exitedState(string(b))
}

// exitedState reports whether a /proc/PID/stat line names a task that has
// exited: zombie (Z) or dead (X; x before Linux 4.14).
func exitedState(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	return strings.IndexByte("ZXx", stat[i+2]) >= 0
}
