package integration

import (
	"strings"
	"testing"
	"time"
)

// TestContainedExhaustion: a fork bomb and memory balloons run as user end
// inside the sandbox, as on a machine: afterwards the same sandbox answers
// a command and the file API. On runsc the agent bounds users' processes
// (RLIMIT_NPROC from the sandbox's memory) and kills the largest process
// when the Sentry's memory runs low (oomguard), so the host never kills the
// Sentry; on crun the pids cgroup and the kernel's OOM killer do it.
func TestContainedExhaustion(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "")
			for _, c := range []struct {
				name, cmd string
				memoryMB  int
			}{
				{"fork bomb", "bomb() { bomb | bomb & }; bomb; sleep 6", 512},
				{"fork bomb in 1 GiB", "bomb() { bomb | bomb & }; bomb; sleep 6", 1024}, // bounded by the pids limit, not memory
				{"one balloon", "python3 -c 'b = b\"x\" * (400 << 20); print(len(b))'", 128},
				{"growing balloon", "python3 -c '\nl = []\nwhile True: l.append(b\"x\" * (8 << 20))'", 256},
			} {
				t.Run(c.name, func(t *testing.T) {
					sb := d.create(map[string]any{"memoryMB": c.memoryMB})
					out, code, err := sb.runErr("user", c.cmd, 6*time.Second)
					if err == nil && code == 0 && !strings.HasPrefix(c.name, "fork bomb") {
						t.Fatalf("%s succeeded: %q", c.name, out)
					}
					sb.usableAfter(t)
				})
			}
		})
	}
}

// usableAfter: the sandbox answers a command and the file API.
func (s *sandbox) usableAfter(t *testing.T) {
	t.Helper()
	if out, code, err := s.runErr("user", "echo alive", 20*time.Second); err != nil || code != 0 || out != "alive\n" {
		t.Fatalf("sandbox unusable afterwards: %q %d %v", out, code, err)
	}
	if code, body := s.upload("/home/user/after.txt", []byte("still here")); code != 200 {
		t.Fatalf("upload afterwards: %d %s", code, body)
	}
	if body, code := s.download("/home/user/after.txt"); code != 200 || body != "still here" {
		t.Fatalf("download afterwards: %d %q", code, body)
	}
}
