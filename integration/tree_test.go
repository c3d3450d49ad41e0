package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTimeoutKillsTree: a command's deadline ends its whole tree, as
// killing its cgroup would: a setsid'd, TERM/HUP-ignoring, double-forked
// descendant and a plain background child die with it (the leader is a
// child subreaper, so orphans stay in its tree; the tree is frozen with
// SIGSTOP before SIGKILL). A command that ends by itself still leaves its
// daemons running (E2B background semantics). On runsc and crun.
func TestTimeoutKillsTree(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			sb := startDaemon(t, rt, "").create(nil)
			cmd := `(setsid sh -c 'trap "" TERM HUP; exec sleep 31338' >/dev/null 2>&1 &); (sleep 31339 >/dev/null 2>&1 &); sleep 31340`
			t0 := time.Now()
			// The stream ends with deadline_exceeded, or with the killed
			// leader's end event when that lands first.
			_, code, err := sb.runErr("user", cmd, 2*time.Second)
			if (err == nil && code == 0) || time.Since(t0) > 10*time.Second {
				t.Fatalf("exit %d, err %v after %v, want killed at ~2 s", code, err, time.Since(t0))
			}
			if n := sb.countSleeps("3133[89]|31340", 5*time.Second); n != 0 {
				t.Fatalf("%d descendants survived their command's deadline", n)
			}
			// Ended by itself: its daemon lives on.
			sb.run("user", `(setsid sh -c 'exec sleep 31341' >/dev/null 2>&1 &); true`, 10*time.Second)
			if n := sb.countSleeps("31341", 0); n != 1 {
				t.Fatalf("a finished command's daemon: %d running, want 1", n)
			}
		})
	}
}

// countSleeps counts processes 'sleep <re>' in the sandbox, waiting up to
// within for the count to reach 0.
func (s *sandbox) countSleeps(re string, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		out, _ := s.run("root", `ps -eo args | grep -cE '^sleep (`+re+`)$' || true`, 20*time.Second)
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			s.d.t.Fatalf("ps: %q", out)
		}
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(200 * time.Millisecond)
	}
}
