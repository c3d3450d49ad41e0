package integration

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// fingerprintCmd prints what a tenant's first command can see of its
// environment: identity, cwd, umask, rlimits, env (minus what names the
// sandbox), files in the writable places (not their times, nor the random
// name of the agent's own interpreter dir) and the processes running but
// the pipeline's own: its sort may be running when ps looks, and a member
// caught in the middle of its exec has its new name but no arguments yet
// (ps prints "[grep]"), which made this test fail once in CI.
const fingerprintCmd = `id; pwd; umask; ulimit -a; env | grep -v -e '^E2B_SANDBOX_ID=' -e '^HOSTNAME=' -e '^_=' | sort
ls -la --time-style=+ /tmp /home/user /dev/shm /var/tmp | sed 's/sbx-interpreter-[0-9]*/sbx-interpreter-N/'; ps -eo user,args --no-headers | grep -v -e 'ps -eo' -e '^root *grep' -e '^[a-z]* *sort$' -e '^[a-z]* *\[\(grep\|sort\)\]$' | sort`

// TestPooledLikeCold: the first command in a sandbox taken from a warm
// pool (started before the tenant asked, and warmed with a command as the
// template's user) sees exactly what it sees in a sandbox started cold for
// the request: same user, cwd, umask, limits, env, files and processes, and
// nothing a previous tenant of the pool left.
func TestPooledLikeCold(t *testing.T) {
	for _, rt := range []string{"crun", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			req := map[string]any{"envVars": map[string]string{"TENANT": "t1"}}
			d := startDaemon(t, rt, "", "--pool", "base=1")
			waitPool(t, d)
			prev := d.create(nil) // a previous tenant leaves traces, then goes
			prev.run("", "echo x > /tmp/prev; echo x > ~/prev; echo 'export LEAK=1' >> ~/.bashrc; (sleep 600 &)", 20*time.Second)
			d.api("DELETE", "/sandboxes/"+prev.ID, nil, nil)
			waitPool(t, d)
			pooled, _ := d.create(req).run("", fingerprintCmd, 20*time.Second)
			d.stop(syscall.SIGTERM)
			cold, _ := startDaemon(t, rt, "").create(req).run("", fingerprintCmd, 20*time.Second)
			if pooled != cold {
				t.Fatalf("pooled sandbox differs from a cold one:\n--- pooled\n%s\n--- cold\n%s", pooled, cold)
			}
			for _, leak := range []string{"prev", "LEAK", "sleep 600"} {
				if strings.Contains(pooled, leak) {
					t.Fatalf("a previous tenant's %q is visible:\n%s", leak, pooled)
				}
			}
			if !strings.Contains(pooled, "TENANT=t1") || !strings.Contains(pooled, "uid=1000(user)") {
				t.Fatalf("fingerprint lacks the tenant's env or user:\n%s", pooled)
			}
		})
	}
}

// waitPool waits until the daemon's pool holds a ready sandbox (the metric
// the daemon exports), so the next create is a claim.
func waitPool(t *testing.T, d *daemon) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if poolReady(d) > 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pool did not fill within 60 s\n%s", tail(d.log.String(), 2000))
}

// poolReady sums the ready sandboxes of the daemon's pools (GET /health).
func poolReady(d *daemon) int {
	var h struct {
		Pools map[string]int `json:"pools"`
	}
	d.api("GET", "/health", nil, &h)
	n := 0
	for _, v := range h.Pools {
		n += v
	}
	return n
}
