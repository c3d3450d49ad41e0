package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOneDaemonPerDataDir: while a daemon serves a data dir, a second sbx
// serve on it — and sbx serve --reap-all-and-exit — exits non-zero at once
// naming the dir and the holder's pid, and the running sandbox is left
// alone; after kill -9 of the first (its sandbox's processes still running,
// none holding the lock) a new daemon starts on the dir and re-adopts it.
// On crun and runsc (whose Sentry and gofer the daemon's runsc starts).
func TestOneDaemonPerDataDir(t *testing.T) {
	for _, rt := range []string{"crun", "runsc"} {
		t.Run(rt, func(t *testing.T) { oneDaemonPerDataDir(t, rt) })
	}
}

func oneDaemonPerDataDir(t *testing.T, rt string) {
	d := startDaemon(t, rt, "")
	sb := d.create(nil)
	for _, extra := range [][]string{nil, {"--reap-all-and-exit"}} {
		out, took, err := d.secondServe(extra...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("second serve %v on %s: %v, want exit status 1\n%s", extra, d.dataDir, err, out)
		}
		pid := "pid " + strconv.Itoa(d.cmd.Process.Pid)
		if !strings.Contains(out, "in use by another sbx serve") || !strings.Contains(out, d.dataDir) || !strings.Contains(out, pid) {
			t.Errorf("second serve %v: message does not name the dir %s and %s:\n%s", extra, d.dataDir, pid, out)
		}
		if took > 5*time.Second {
			t.Errorf("second serve %v took %v to fail, want at once", extra, took)
		}
	}
	if out, code := sb.run("", "echo alive", 10*time.Second); code != 0 || !strings.Contains(out, "alive") {
		t.Fatalf("sandbox after the refused starts: %q exit %d", out, code)
	}
	d.stop(syscall.SIGKILL)
	d2 := startDaemon(t, rt, d.dataDir)
	sb.d = d2
	if out, code := sb.run("", "echo adopted", 10*time.Second); code != 0 || !strings.Contains(out, "adopted") {
		t.Fatalf("sandbox after kill -9 and a new start: %q exit %d", out, code)
	}
	d2.deleteQuiet(sb.ID)
}

// secondServe runs sbx serve with d's arguments on another port (plus
// extra) while d runs, bounded by 30 s: its output, error and duration.
func (d *daemon) secondServe(extra ...string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{}, d.args...)
	for i := range args {
		if args[i] == "--listen" {
			args[i+1] = freeAddr(d.t)
		}
	}
	cmd := exec.CommandContext(ctx, d.cmd.Path, append(args, extra...)...)
	cmd.Env = append(os.Environ(), "SBX_API_KEY="+apiKey)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), time.Since(start), err
}
