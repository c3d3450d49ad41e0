package oci

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
// per guestPoll up to guestMaxRaise, then once per guestSlowPoll; it comes
// back once usage is under the limit.
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
	for i := 1; i < guestMaxRaise/guestStep; i++ {
		w.last = time.Time{}
		w.step()
	}
	if mem, _ := readLimits(t, dir); mem != limit+guestMaxRaise || !w.raised() {
		t.Fatalf("raised to %d, want %d", mem, limit+guestMaxRaise)
	}
	w.last = time.Now().Add(-2 * guestPoll)
	w.step() // at the top: guestSlowPoll
	if mem, _ := readLimits(t, dir); mem != limit+guestMaxRaise {
		t.Fatalf("raised to %d within guestSlowPoll at the top", mem)
	}
	w.last = time.Now().Add(-guestSlowPoll)
	w.step()
	if mem, _ := readLimits(t, dir); mem != limit+guestMaxRaise+guestStep {
		t.Fatalf("raised to %d after guestSlowPoll, want one more step", mem)
	}

	// Usage back under the limit: the limit is restored.
	dir = fakeCgroup(t, limit+guestMaxRaise, limit/2, false)
	w = &guestWatch{dir: dir, parent: t.TempDir(), limit: limit, log: log}
	w.step()
	if mem, memsw := readLimits(t, dir); mem != limit || memsw != limit {
		t.Fatalf("limits %d %d after usage fell, want %d", mem, memsw, limit)
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

// TestGuestWatchKernel runs the watch on a real v1 memory cgroup of 32 MiB
// with the OOM killer off: a process committing 40 MiB waits at the limit
// and gets through by the watch's raises; one committing 96 MiB waits at
// the top of the raises, alive, never OOM-killed, until it is killed; then
// the limit comes back to 32 MiB.
func TestGuestWatchKernel(t *testing.T) {
	root := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "memory.oom_control")); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and a cgroup v1 memory controller")
	}
	dir := filepath.Join(root, "sbx-guestwatch-test-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	const limit = 32 << 20
	if err := setMemoryLimit(dir, limit); err != nil {
		t.Fatal(err)
	}
	if err := writeCgroup(dir, "memory.oom_control", "1"); err != nil {
		t.Fatal(err)
	}
	w, err := watchGuest(dir, limit, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer w.stop()
	balloon := func(mib int) *exec.Cmd {
		cmd := exec.Command("sh", "-c", "echo $$ > "+dir+"/cgroup.procs && exec python3 -c 'b = b\"x\" * ("+strconv.Itoa(mib)+" << 20)'")
		if err := cmd.Start(); err != nil {
			t.Skip(err)
		}
		return cmd
	}
	if err := balloon(40).Wait(); err != nil {
		t.Fatalf("40 MiB through the raises: %v", err)
	}
	cmd := balloon(96)
	deadline := time.Now().Add(10 * time.Second)
	for mem, _ := readLimits(t, dir); mem < limit+guestMaxRaise || !underOOM(dir); mem, _ = readLimits(t, dir) {
		if time.Now().After(deadline) {
			t.Fatalf("never at the top of the raises: limit %d", mem)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // waiting, not killed
	if b, _ := os.ReadFile(filepath.Join(dir, "memory.oom_control")); !strings.Contains(string(b), "oom_kill 0") {
		t.Fatalf("the kernel killed: %s", b)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for mem, _ := readLimits(t, dir); mem != limit; mem, _ = readLimits(t, dir) {
		if time.Now().After(deadline) {
			t.Fatalf("limit %d never restored to %d", mem, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSplitGuest on a real v1 memory cgroup, with this process as the
// "Sentry" and a child as its stub: the split moves the child into guest
// with the spec's limit and raises the parent by sentryHeadroom; a second
// split (a re-adopting daemon) keeps a raised guest limit; releaseGuest
// moves the child back and removes guest.
func TestSplitGuest(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.oom_control"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and a cgroup v1 memory controller")
	}
	r := &Runtime{kind: "runsc", cfg: Config{StateDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	id := "splittest" + strconv.Itoa(os.Getpid())
	parent := r.memoryCgroup(id)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join(parent, guestDir)); os.Remove(parent) })
	os.MkdirAll(r.bundle(id), 0o700)
	os.WriteFile(filepath.Join(r.bundle(id), "config.json"), []byte(`{"linux":{"resources":{"memory":{"limit":67108864}}}}`), 0o600)
	child := exec.Command("sh", "-c", "echo $$ > "+parent+"/cgroup.procs && exec sleep 60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	for len(cgroupProcs(parent)) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	guest := filepath.Join(parent, guestDir)
	if _, err := r.splitGuest(id, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if procs := cgroupProcs(guest); len(procs) != 1 || procs[0] != child.Process.Pid {
		t.Fatalf("guest holds %v, want the child %d", procs, child.Process.Pid)
	}
	if mem, _ := readLimits(t, guest); mem != 64<<20 {
		t.Fatalf("guest limit %d", mem)
	}
	if mem, _ := readLimits(t, parent); mem != 64<<20+sentryHeadroom(64<<20) {
		t.Fatalf("parent limit %d", mem)
	}
	setMemoryLimit(guest, 70<<20) // raised when the daemon died
	if _, err := r.splitGuest(id, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if mem, _ := readLimits(t, guest); mem != 70<<20 {
		t.Fatalf("re-adoption reset the raised guest limit to %d", mem)
	}
	r.releaseGuest(id)
	if _, err := os.Stat(guest); err == nil {
		t.Fatal("guest cgroup left")
	}
	if procs := cgroupProcs(parent); len(procs) != 1 {
		t.Fatalf("parent holds %v after release", procs)
	}
}
