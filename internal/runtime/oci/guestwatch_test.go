package oci

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/agent/oomguard"
)

// fakeCgroup is a directory with a v1 memory cgroup's files (plain files:
// what the watch reads and writes, without a kernel behind them).
func fakeCgroup(t *testing.T, limit, usage int64, oom bool) string {
	t.Helper()
	dir := t.TempDir()
	under := "0"
	if oom {
		under = "1"
	}
	for f, v := range map[string]string{
		"memory.limit_in_bytes":       strconv.FormatInt(limit, 10),
		"memory.memsw.limit_in_bytes": strconv.FormatInt(limit, 10),
		"memory.usage_in_bytes":       strconv.FormatInt(usage, 10),
		"memory.oom_control":          "oom_kill_disable 1\nunder_oom " + under + "\noom_kill 0\n",
		"cgroup.procs":                "",
	} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readLimits(t *testing.T, dir string) (mem, memsw int64) {
	t.Helper()
	mem, _ = readInt(filepath.Join(dir, "memory.limit_in_bytes"))
	memsw, _ = readInt(filepath.Join(dir, "memory.memsw.limit_in_bytes"))
	return mem, memsw
}

// TestGuestWatchStep: under OOM the limit rises by guestStep at most once
// per guestPoll and never past guestMaxRaise; it comes back once usage is
// under the limit; at the top for guestGiveUp the host OOM killer is back.
func TestGuestWatchStep(t *testing.T) {
	const limit = 128 << 20
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := fakeCgroup(t, limit, limit, true)
	w := &guestWatch{dir: dir, parent: t.TempDir(), limit: limit, log: log}
	w.step()
	w.step() // within guestPoll: no second raise
	if mem, memsw := readLimits(t, dir); mem != limit+guestStep || memsw != mem {
		t.Fatalf("after one OOM: limits %d %d, want %d", mem, memsw, limit+guestStep)
	}
	for i := 0; i < 2*guestMaxRaise/guestStep; i++ {
		w.last = time.Time{}
		w.step()
	}
	if mem, _ := readLimits(t, dir); mem != limit+guestMaxRaise {
		t.Fatalf("raised to %d, want at most %d", mem, limit+guestMaxRaise)
	}
	if !w.raised() {
		t.Fatal("raised() = false at the top")
	}
	w.top = time.Now().Add(-guestGiveUp - time.Second)
	if w.step() {
		t.Fatal("still waiting after guestGiveUp")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "memory.oom_control")); string(b) != "0" {
		t.Fatalf("oom_control = %q, want the OOM killer back (0)", b)
	}

	// Usage back under the limit: the limit is restored.
	dir = fakeCgroup(t, limit+guestMaxRaise, limit/2, false)
	w = &guestWatch{dir: dir, parent: t.TempDir(), limit: limit, log: log}
	if !w.step() {
		t.Fatal("step gave up without an OOM")
	}
	if mem, memsw := readLimits(t, dir); mem != limit || memsw != limit {
		t.Fatalf("limits %d %d after usage fell, want %d", mem, memsw, limit)
	}
}

// TestSpecMemory reads the limit from a bundle and refuses one without.
func TestSpecMemory(t *testing.T) {
	b := t.TempDir()
	os.WriteFile(filepath.Join(b, "config.json"), []byte(`{"linux":{"resources":{"memory":{"limit":134217728}}}}`), 0o600)
	if n, err := specMemory(b); err != nil || n != 128<<20 {
		t.Fatalf("specMemory = %d, %v", n, err)
	}
	os.WriteFile(filepath.Join(b, "config.json"), []byte(`{"linux":{}}`), 0o600)
	if _, err := specMemory(b); err == nil {
		t.Fatal("no limit accepted")
	}
}

// TestStatOf reads our own parent and start time.
func TestStatOf(t *testing.T) {
	pp, start := statOf(os.Getpid())
	if pp != os.Getppid() || start == 0 {
		t.Fatalf("statOf = %d %d, want ppid %d", pp, start, os.Getppid())
	}
	if !descends(os.Getpid(), os.Getppid()) || descends(os.Getppid(), os.Getpid()) {
		t.Fatal("descends wrong")
	}
}

// TestAgentStub: a process with a mapping over oomguard.MarkerAddr is the
// agent's stub; one without is not.
func TestAgentStub(t *testing.T) {
	if agentStub(os.Getpid()) {
		t.Fatal("marker found before mapping it")
	}
	p, err := unix.MmapPtr(-1, 0, unsafe.Add(nil, oomguard.MarkerAddr), 3*4096, unix.PROT_READ,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
	if err != nil {
		t.Skipf("cannot map the marker address here: %v", err)
	}
	defer unix.MunmapPtr(p, 3*4096)
	if !agentStub(os.Getpid()) {
		t.Fatal("marker mapping not found in /proc/self/maps")
	}
}
