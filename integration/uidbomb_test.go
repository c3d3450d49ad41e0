package integration

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// uidBomb: root in the sandbox forks bash bombs under six fresh uids at
// once (each uid gets its own RLIMIT_NPROC count on runsc), forking for
// 8 s, then every process sleeps out and ends.
const uidBomb = `cat > /tmp/bomb.sh <<'EOF'
bomb() { [ $SECONDS -lt 8 ] && { bomb | bomb & }; }; bomb; sleep 10
EOF
chmod 755 /tmp/bomb.sh
for u in 2001 2002 2003 2004 2005 2006; do
  python3 -c 'import os,sys;u=int(sys.argv[1]);os.setgroups([]);os.setgid(u);os.setuid(u);os.execv("/bin/bash",["bash","/tmp/bomb.sh"])' $u &
done
wait; echo bombed`

// TestUIDBombNeighbours: a fork bomb spread over many uids by root inside a
// sandbox (on runsc the per-uid RLIMIT_NPROC does not bound the total:
// Known gaps) stays the tenant's problem: a neighbour sandbox answers every
// command throughout (each within 10 s) and keeps a process started
// before, the host forks, and the bombing sandbox's host pids stay within
// its cgroup's pids.max (it lives or is reaped; both are logged).
func TestUIDBombNeighbours(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "")
			bomber, neighbour := d.create(nil), d.create(nil)
			sibling := neighbour.startSibling(t)
			pidsDir := "/sys/fs/cgroup/pids/sbx/" + bomber.ID + "/"
			limit := readInt(pidsDir + "pids.max") // before: a bomber that dies takes its cgroup along
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, code, err := bomber.runErr("root", uidBomb, 25*time.Second)
				t.Logf("bomb: exit %d, %v: %q", code, err, tail(out, 200))
			}()
			peak, worst := 0, time.Duration(0)
			for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
				peak = max(peak, readInt(pidsDir+"pids.current"))
				t0 := time.Now()
				out, code, err := neighbour.runErr("user", "echo alive", 10*time.Second)
				worst = max(worst, time.Since(t0))
				if err != nil || code != 0 || out != "alive\n" {
					t.Errorf("the neighbour failed a command during the bomb: %q %d %v", out, code, err)
				}
				if err := exec.Command("true").Run(); err != nil {
					t.Errorf("the host cannot fork during the bomb: %v", err)
				}
			}
			wg.Wait()
			t.Logf("%s: bomber's host pids peak %d of pids.max %d; the neighbour's slowest command %v", rt, peak, limit, worst)
			if limit > 0 && peak > limit {
				t.Errorf("host pids %d past pids.max %d", peak, limit)
			}
			neighbour.siblingAlive(t, sibling)
			neighbour.usableAfter(t)
			out, code, err := bomber.runWhenFree("user", "echo alive")
			t.Logf("the bomber afterwards: %q %d %v", out, code, err)
		})
	}
}

// readInt reads a cgroup file holding one number; 0 if unreadable ("max"
// included).
func readInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, c := range strings.TrimSpace(string(b)) {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}
