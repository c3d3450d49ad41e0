package runtime

import (
	"os"
	"strconv"
	"strings"
)

// ProcessAlive reports whether host pid exists and is not a zombie. Backends
// use it where a runtime's own state is stale (runsc after an OOM-killed
// Sentry); the manager's watchdog uses it to find sandboxes whose init died.
func ProcessAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
