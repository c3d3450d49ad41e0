package runtimetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// limitsProbe tries to exceed memory, pids and open files from inside.
const limitsProbe = `exec >> /var/tmp/limits 2>&1; {
echo "nofile: $(ulimit -n)"
python3 -c '
import os, time
n = 0
try:
    for _ in range(200):
        pid = os.fork()
        if pid == 0:
            try:
                os.execv("/bin/sleep", ["sleep", "3"])
            finally:
                os._exit(1)
        n += 1
except OSError:
    pass
print("forked:", n)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break' 2>&1
echo START-MEM
python3 -c 'b = bytearray(400 << 20); print("alloc ok")' 2>/dev/null; echo "mem-exit: $?"
echo END
}; exec sleep 1000`

func testLimits(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	ctx := context.Background()
	lim := runtime.Limits{MemoryBytes: 256 << 20, CPUMillis: 500, Pids: 64, NoFile: 1024}
	script := limitsProbe
	if rt.Name() == "runsc" {
		script = runscLimitsProbe
	}
	s, rootfs := fx.spec(t, rt, script, lim)
	sb := create(t, rt, s)
	checkCgroupLimits(t, rt.Name(), sb, lim)
	if rt.Name() == "runsc" {
		testRunscLimits(t, sb, rootfs)
		testRunscForkBomb(t, fx, rt)
		return
	}
	out := waitFile(t, rootfs, "var/tmp/limits", 60*time.Second)
	checkPidsNofile(t, out)
	if strings.Contains(out, "alloc ok") || !strings.Contains(out, "mem-exit: 137") {
		t.Errorf("400 MiB allocation not OOM-killed under a 256 MiB limit:\n%s", out)
	}
	if st, err := sb.State(ctx); err != nil || st != runtime.StateRunning {
		t.Errorf("sandbox died from its own limits: %v %v", st, err)
	}
}

// runscLimitsProbe checks the rlimit, then inflates a balloon twice the
// memory limit.
const runscLimitsProbe = `exec >> /var/tmp/limits 2>&1; echo "nofile: $(ulimit -n)"
python3 -c 'b = bytearray(512 << 20); print("alloc ok")'; echo END; exec sleep 1000`

// testRunscLimits: gVisor runs every task inside its Sentry. Where the
// backend gives the sandbox's stubs a guest memory cgroup (oci guestmem.go,
// cgroup v1), the balloon waits at the limit with the host OOM killer off:
// no allocation past it, the sandbox keeps running (in sbx the agent's OOM
// guard, absent here, then kills the balloon). Without one the host's
// memory cgroup bounds the Sentry as a whole: the balloon ends with the
// whole sandbox OOM-killed by the host kernel — contained, and visible to
// State as stopped.
func testRunscLimits(t *testing.T, sb runtime.Sandbox, rootfs string) {
	out := waitPrefix(t, rootfs, "var/tmp/limits", "nofile:", 30*time.Second)
	if !strings.Contains(out, "nofile: 1024") {
		t.Errorf("nofile limit not applied:\n%s", out)
	}
	guest := filepath.Join(sb.CgroupPaths()["memory"], "guest", "memory.oom_control")
	var st runtime.State
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(rootfs, "var/tmp/limits"))
		if strings.Contains(string(b), "alloc ok") {
			t.Fatalf("512 MiB allocated under a 256 MiB limit:\n%s", b)
		}
		st, _ = sb.State(context.Background())
		if oc, err := os.ReadFile(guest); err == nil && strings.Contains(string(oc), "under_oom 1") {
			if st != runtime.StateRunning {
				t.Fatalf("balloon waiting in the guest cgroup, but the sandbox is %s", st)
			}
			return
		}
		if st == runtime.StateStopped || strings.Contains(string(b), "END") {
			return
		}
	}
	t.Fatalf("balloon neither failed, waited nor stopped the sandbox (state %s)", st)
}

// testRunscForkBomb: the Sentry's threads and systrap stubs count against
// the host pids cgroup, so a fork bomb ends with the whole sandbox killed —
// never with 200 processes.
func testRunscForkBomb(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	s, rootfs := fx.spec(t, rt, limitsProbe, runtime.Limits{Pids: 64})
	sb := create(t, rt, s)
	var st runtime.State
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(rootfs, "var/tmp/limits"))
		if strings.Contains(string(b), "forked: 200") {
			t.Fatalf("fork bomb not bounded:\n%s", b)
		}
		if st, _ = sb.State(context.Background()); st == runtime.StateStopped || strings.Contains(string(b), "forked:") {
			return
		}
	}
	t.Fatalf("fork bomb neither bounded nor stopped the sandbox (state %s)", st)
}

// checkCgroupLimits reads the limits back from the host cgroup files of a
// sandbox of runtime kind.
func checkCgroupLimits(t *testing.T, kind string, sb runtime.Sandbox, lim runtime.Limits) {
	t.Helper()
	paths := sb.CgroupPaths()
	want := map[string]string{}
	if p, ok := paths[""]; ok {
		want[filepath.Join(p, "memory.max")] = fmt.Sprint(lim.MemoryBytes)
		want[filepath.Join(p, "pids.max")] = fmt.Sprint(runtime.HostPids(kind, lim.Pids))
		want[filepath.Join(p, "cpu.max")] = fmt.Sprintf("%d 100000", lim.CPUMillis*100)
	} else {
		mem := paths["memory"]
		if _, err := os.Stat(filepath.Join(mem, "guest")); err == nil {
			// runsc's guest memory cgroup holds the sandbox's processes; the
			// parent adds the Sentry's headroom (oci guestmem.go).
			mem = filepath.Join(mem, "guest")
		}
		want[filepath.Join(mem, "memory.limit_in_bytes")] = fmt.Sprint(lim.MemoryBytes)
		want[filepath.Join(paths["pids"], "pids.max")] = fmt.Sprint(runtime.HostPids(kind, lim.Pids))
		want[filepath.Join(paths["cpu"], "cpu.cfs_quota_us")] = fmt.Sprint(lim.CPUMillis * 100)
	}
	for f, w := range want {
		b, err := os.ReadFile(f)
		if got := strings.TrimSpace(string(b)); err != nil || got != w {
			t.Errorf("%s = %q (%v), want %q (paths %v)", f, got, err, w, paths)
		}
	}
}

func checkPidsNofile(t *testing.T, out string) {
	t.Helper()
	if strings.Contains(out, "forked: 200") || !strings.Contains(out, "forked:") {
		t.Errorf("pids limit not enforced:\n%s", out)
	}
	if !strings.Contains(out, "nofile: 1024") {
		t.Errorf("nofile limit not applied:\n%s", out)
	}
}

// waitPrefix waits until the file at path contains marker.
func waitPrefix(t *testing.T, rootfs, path, marker string, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(rootfs, path)); err == nil && strings.Contains(string(b), marker) {
			return string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(rootfs, path))
	t.Fatalf("%s never showed %q; so far:\n%s", path, marker, b)
	return ""
}
