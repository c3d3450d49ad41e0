// Package failpoint lets tests make the daemon fail at named steps. It is off
// unless the environment variable SBX_FAILPOINTS is set, e.g.
//
//	SBX_FAILPOINTS="create/after-runtime=error,delete/before-layer=kill"
//
// Actions: "error" returns an error from Hit; "errorN" (e.g. "error3") returns
// one from the first N hits only, then lets the step through (a transient
// failure); "kill" SIGKILLs the process (simulating a crash at that exact
// step); "sleep" pauses 2 s. The variable is read once at start; Hit on an
// unset name costs one map lookup under a mutex.
package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrInjected is returned by Hit for an "error" failpoint.
var ErrInjected = errors.New("failpoint: injected failure")

var points = parse(os.Getenv("SBX_FAILPOINTS"))

// mu guards points (replaced by Set) and hits, the hit counts of "errorN"
// points.
var (
	mu   sync.Mutex
	hits = map[string]int{}
)

func parse(s string) map[string]string {
	if s == "" {
		return nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if v == "" {
			v = "error"
		}
		out[k] = v
	}
	return out
}

// Hit triggers the failpoint name if it is armed.
func Hit(name string) error {
	mu.Lock()
	action, ok := points[name]
	mu.Unlock()
	if !ok {
		return nil
	}
	switch action {
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour) // not reached
	case "sleep":
		time.Sleep(2 * time.Second)
		return nil
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(action, "error")); err == nil && !spent(name, n) {
		return nil
	}
	return fmt.Errorf("%w at %s", ErrInjected, name)
}

// spent counts a hit of an "errorN" point and reports whether it still fails.
func spent(name string, n int) bool {
	mu.Lock()
	defer mu.Unlock()
	hits[name]++
	return hits[name] <= n
}

// Set arms failpoints for tests in this process (replacing any) and resets
// the counts of "errorN" points.
func Set(spec string) {
	mu.Lock()
	defer mu.Unlock()
	points = parse(spec)
	hits = map[string]int{}
}
