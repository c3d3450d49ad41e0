package runtime

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcessAlive reports whether host pid exists and is not a zombie. Backends
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
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
