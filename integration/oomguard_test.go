package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/agent/oomguard"
)

// sysinfoVsMeminfo grows a process's memory 16 MiB at a time to 96 MiB and
// prints, before each step and after freeing it, sysinfo(2)'s total and
// free bytes and /proc/meminfo's MemTotal and MemAvailable (bytes).
const sysinfoVsMeminfo = `python3 -c '
import ctypes
class SI(ctypes.Structure):
    _fields_ = [("uptime", ctypes.c_long), ("loads", ctypes.c_ulong * 3), ("totalram", ctypes.c_ulong),
        ("freeram", ctypes.c_ulong), ("sharedram", ctypes.c_ulong), ("bufferram", ctypes.c_ulong),
        ("totalswap", ctypes.c_ulong), ("freeswap", ctypes.c_ulong), ("procs", ctypes.c_ushort),
        ("pad", ctypes.c_ushort), ("totalhigh", ctypes.c_ulong), ("freehigh", ctypes.c_ulong), ("unit", ctypes.c_uint)]
libc = ctypes.CDLL(None)
def show():
    s = SI()
    assert libc.sysinfo(ctypes.byref(s)) == 0
    m = {l.split(":")[0]: int(l.split()[1]) * 1024 for l in open("/proc/meminfo")}
    print(s.totalram * s.unit, s.freeram * s.unit, m["MemTotal"], m["MemAvailable"], flush=True)
bufs = []
for _ in range(6):
    show()
    b = bytearray(16 << 20)
    for i in range(0, len(b), 4096): b[i] = 1
    bufs.append(b)
show()
del bufs
show()
'`

// TestOOMGuardSysinfo: the agent's OOM guard (internal/agent/oomguard)
// skips /proc/meminfo while sysinfo(2) shows over half the memory free by a
// margin of oomguard.IdleMargin. sysinfo's usage is the memory file's
// committed bytes (an fstat, always current), meminfo's the Sentry's
// accounting, brought up to date by a throttled scan. Sound if both report
// the same total and, while memory grows (what the guard is for), sysinfo's
// free figure never exceeds MemAvailable by more than the margin; after a
// free it may (the scan has not yet seen the free). Checked while a process
// grows and frees 96 MiB.
func TestOOMGuardSysinfo(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(map[string]any{"memoryMB": 256})
	out, code := sb.run("user", sysinfoVsMeminfo, 60*time.Second)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	lines := strings.Fields(strings.ReplaceAll(out, "\n", " ; "))
	var rows [][4]uint64
	var row [4]uint64
	n := 0
	for _, f := range lines {
		if f == ";" {
			continue
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		row[n] = v
		if n++; n == 4 {
			rows, n = append(rows, row), 0
		}
	}
	if len(rows) != 8 {
		t.Fatalf("want 8 readings, got %d: %q", len(rows), out)
	}
	for i, r := range rows {
		total, free, memTotal, avail := r[0], r[1], r[2], r[3]
		t.Logf("reading %d: sysinfo total %d MiB free %d MiB, meminfo total %d MiB available %d MiB", i, total>>20, free>>20, memTotal>>20, avail>>20)
		if total != memTotal {
			t.Errorf("reading %d: sysinfo total %d != MemTotal %d", i, total, memTotal)
		}
		if i < 7 && free > avail+total/oomguard.IdleMargin {
			t.Errorf("reading %d: sysinfo free %d > MemAvailable %d + the guard's margin: its idle test would be too lax", i, free, avail)
		}
	}
	if grown := rows[0][1] - rows[6][1]; grown < 80<<20 {
		t.Errorf("sysinfo free fell by %d MiB over 96 MiB of growth", grown>>20)
	}
}

// sandboxCPU is the CPU time the sandbox's cgroup used so far (cgroup v1
// cpuacct or v2 cpu.stat), or -1.
func sandboxCPU(id string) time.Duration {
	if b, err := os.ReadFile("/sys/fs/cgroup/cpuacct/sbx/" + id + "/cpuacct.usage"); err == nil {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return time.Duration(ns)
		}
	}
	b, err := os.ReadFile("/sys/fs/cgroup/sbx/" + id + "/cpu.stat")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
			us, _ := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond
		}
	}
	return -1
}

// cpuOver is the sandbox's CPU per second over d.
func cpuOver(t *testing.T, id string, d time.Duration) time.Duration {
	t.Helper()
	a := sandboxCPU(id)
	time.Sleep(d)
	b := sandboxCPU(id)
	if a < 0 || b < 0 {
		t.Fatalf("no cpu accounting for sandbox %s", id)
	}
	return (b - a) * time.Second / d
}

// TestOOMGuardParks: in an empty runsc sandbox (no process but the agent)
// with no request for oomguard.QuietAfter the OOM guard stops polling, so
// an idle sandbox costs the host next to no CPU; a request wakes it, and a
// process that is already running keeps it awake however long nobody
// talks to the agent: a balloon started after a quiet spell, either way,
// is killed inside and the sandbox lives on, also after a pause and resume
// taken while the guard was parked.
func TestOOMGuardParks(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(map[string]any{"memoryMB": 128})
	time.Sleep(oomguard.QuietAfter + 2*time.Second)
	if c := cpuOver(t, sb.ID, 3*time.Second); c > 10*time.Millisecond {
		t.Errorf("an idle, empty sandbox used %v of CPU a second (the guard parks)", c)
	}
	// A request wakes the guard: the balloon dies inside; so after a pause
	// taken while the guard was parked and a resume (the restored guard maps
	// its marker page again once woken: guestmem.go).
	for _, pause := range []bool{false, true} {
		if pause {
			time.Sleep(oomguard.QuietAfter + 2*time.Second)
			sb.pauseResume(t)
		}
		out, code, err := sb.runErr("user", balloons[2].cmd, 60*time.Second)
		if err != nil || code == 0 {
			t.Fatalf("balloon after a parked spell (paused: %v): %q %d %v", pause, out, code, err)
		}
		sb.usableAfter(t)
	}
	// A process that runs keeps the guard awake: a balloon it starts after
	// longer than QuietAfter without a request byte dies inside too.
	quiet := strconv.Itoa(int((oomguard.QuietAfter + 3*time.Second).Seconds()))
	out, code, err := sb.runErr("user", "sleep "+quiet+"; "+balloons[2].cmd+"; echo balloon=$?", 90*time.Second)
	if err != nil || !strings.Contains(out, "balloon=") || strings.Contains(out, "balloon=0") {
		t.Fatalf("balloon after a quiet spell with a process running: %q %d %v", out, code, err)
	}
	sb.usableAfter(t)
	// And while a process runs, the guard polls.
	sibling := sb.startSibling(t)
	time.Sleep(oomguard.QuietAfter + 2*time.Second)
	if c := cpuOver(t, sb.ID, 2*time.Second); c < 2*time.Millisecond {
		t.Errorf("a sandbox with a running process used %v of CPU a second: is the guard awake?", c)
	}
	sb.siblingAlive(t, sibling)
}
