// Package failpoint lets tests make the daemon fail at named steps. It is off
// unless the environment variable SBX_FAILPOINTS is set, e.g.
//
//	SBX_FAILPOINTS="create/after-network=error,delete/before-layer=kill"
//
// Actions: "error" returns an error from Hit; "kill" SIGKILLs the process
// (simulating a crash at that exact step); "sleep" pauses 2 s. The variable is
// read once at start; Hit on an unset name costs one map lookup.
package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// ErrInjected is returned by Hit for an "error" failpoint.
var ErrInjected = errors.New("failpoint: injected failure")

var points = parse(os.Getenv("SBX_FAILPOINTS"))

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
	action, ok := points[name]
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
	return fmt.Errorf("%w at %s", ErrInjected, name)
}

// Set arms failpoints for tests in this process (replacing any).
func Set(spec string) { points = parse(spec) }
