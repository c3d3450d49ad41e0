package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crunShim is a `crun` first in the daemon's PATH that runs the real one,
// or fails, hangs, or is gone, as the test says.
type crunShim struct {
	dir, real string
}

func newCrunShim(t *testing.T) *crunShim {
	real, err := exec.LookPath("crun")
	if err != nil {
		t.Fatal(err)
	}
	s := &crunShim{dir: t.TempDir(), real: real}
	s.set(t, "ok")
	return s
}

// set switches the shim: "ok" (runs crun), "fail" (exits 1), "hang"
// (sleeps), "missing" (no binary at that path).
func (s *crunShim) set(t *testing.T, mode string) {
	path := filepath.Join(s.dir, "crun")
	script := map[string]string{
		"ok":   "#!/bin/sh\nexec " + s.real + " \"$@\"\n",
		"fail": "#!/bin/sh\necho 'crun: injected failure' >&2\nexit 1\n",
		"hang": "#!/bin/sh\nexec sleep 3600\n",
	}[mode]
	_ = os.Remove(path)
	if mode == "missing" {
		return
	}
	if err := os.WriteFile(path+".tmp", []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// health returns GET /health's status code and report.
func (d *daemon) health() (int, map[string]any) {
	var rep map[string]any
	code := d.api("GET", "/health", nil, &rep)
	return code, rep
}

// waitHealth waits (past the health cache) until crun's health is ok or not.
func (d *daemon) waitHealth(t *testing.T, crunOK bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, rep := d.health()
		rts, _ := rep["runtimes"].(map[string]any)
		if code == 200 && (rts["crun"] == "ok") == crunOK && (rep["status"] == "ok") == crunOK {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("health = %d %v, want crun ok=%v", code, rep, crunOK)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestRuntimeBinaryFaults breaks the crun binary under a running daemon
// (default runtime runsc): failing, hanging (--runtime-timeout 3s) and
// missing. Creates on crun fail fast with 503 naming crun, /health reports
// degraded, runsc keeps working; once crun is back and the daemon restarted,
// nothing of the failed creates is left on the host.
func TestRuntimeBinaryFaults(t *testing.T) {
	requirements(t, "runsc", "crun")
	shim := newCrunShim(t)
	env := []string{"PATH=" + shim.dir + ":" + os.Getenv("PATH")}
	d := startDaemonEnv(t, "runsc", "", env, "--runtime-timeout", "3s")
	base := d.inventory()
	d.waitHealth(t, true)
	for _, mode := range []string{"fail", "hang", "missing"} {
		t.Run(mode, func(t *testing.T) {
			shim.set(t, mode)
			t0 := time.Now()
			var e map[string]any
			code := d.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base", "runtime": "crun"}, &e)
			took := time.Since(t0)
			msg, _ := e["message"].(string)
			if code != 503 || !strings.Contains(msg, "crun") {
				t.Errorf("create on a %s crun = %d %v, want 503 naming crun", mode, code, e)
			}
			// hang: one --runtime-timeout (3 s); the cleanup, which would
			// hang too, runs behind the answer.
			if took > 10*time.Second {
				t.Errorf("create on a %s crun took %v", mode, took)
			}
			t.Logf("%s crun: create → %d in %v: %s", mode, code, took, truncate(msg, 200))
			rep := d.waitHealth(t, false)
			t.Logf("health: %v", rep)
			sb := d.create(map[string]any{"runtime": "runsc"})
			if out, _ := sb.run("", "echo ok", 20*time.Second); out != "ok\n" {
				t.Errorf("runsc broken while crun is %s: %q", mode, out)
			}
			if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
				t.Errorf("delete runsc sandbox: %d", code)
			}
		})
	}
	shim.set(t, "ok")
	d.waitHealth(t, true)
	d.stop(syscall.SIGTERM)
	d2 := startDaemonEnv(t, "runsc", d.dataDir, env, "--runtime-timeout", "3s")
	sb := d2.create(map[string]any{"runtime": "crun"})
	if out, _ := sb.run("", "echo ok", 20*time.Second); out != "ok\n" {
		t.Errorf("crun not back: %q", out)
	}
	if code := d2.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
		t.Errorf("delete: %d", code)
	}
	d2.backToBaseline(t, base, sb.ID)
}
