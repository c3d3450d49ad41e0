package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLastWordsLogged (runsc, crun): what the agent writes to its stderr
// once it listens (a Go runtime's fatal error) goes to /.sbx/agent.log in
// the sandbox's own layer, not to a host file; when the sandbox dies on its own (its init SIGKILLed from
// the host) the daemon's reap logs the end of that file, and the host is
// back to its baseline. A symlink planted there is not followed.
func TestLastWordsLogged(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "")
			base := d.inventory()
			sb := d.create(map[string]any{"timeout": 120})
			// The agent is undumpable (/proc/1/fd is closed to the sandbox):
			// what its runtime would write there is appended directly.
			if out, code := sb.run("root", "stat -c '%U %a %F' /.sbx/agent.log && echo last-words-$((6*7)) >> /.sbx/agent.log", 20*time.Second); code != 0 || out != "root 600 regular empty file\n" {
				t.Fatalf("the agent's stderr inside the sandbox: %q (exit %d)", out, code)
			}
			killInit(t, d, sb, rt)
			if !waitLogFor(d, "last-words-42", 10*time.Second) {
				t.Fatalf("the reap did not log the agent's last words:\n%s", tail(d.log.String(), 3000))
			}
			for _, l := range strings.Split(d.log.String(), "\n") {
				if strings.Contains(l, "last-words-42") {
					t.Logf("%s", l)
				}
			}
			planted := d.create(map[string]any{"timeout": 120})
			if _, code := planted.run("root", "ln -sf /etc/hostname /.sbx/agent.log", 20*time.Second); code != 0 {
				t.Fatal("planting a symlink failed")
			}
			host, _ := os.ReadFile("/etc/hostname")
			killInit(t, d, planted, rt)
			if !waitLogFor(d, "sandbox="+planted.ID, 10*time.Second) {
				t.Fatalf("the second sandbox's death was not logged:\n%s", tail(d.log.String(), 3000))
			}
			for _, l := range strings.Split(d.log.String(), "\n") {
				if strings.Contains(l, "sandbox="+planted.ID) && strings.Contains(l, "agent=") {
					t.Fatalf("a planted symlink was followed (host /etc/hostname %q): %s", host, l)
				}
			}
			d.backToBaseline(t, base)
		})
	}
}

// killInit SIGKILLs sb's init from the host (its pid file in the bundle),
// as a Sentry OOM-killed by the host or an agent that died would leave it.
func killInit(t *testing.T, d *daemon, sb *sandbox, rt string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dataDir, "run", "runtime", "bundles-"+rt, sb.ID, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("pid file %q: %v", b, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// waitLogFor waits up to d for s in the daemon's log.
func waitLogFor(dm *daemon, s string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if strings.Contains(dm.log.String(), s) {
			return true
		}
	}
	return false
}
