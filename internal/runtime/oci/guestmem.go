package oci

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbx-dev/sbx/internal/agent/oomguard"
)

// Guest memory on runsc (cgroup v1 memory controller only).
//
// Under gVisor the host memory cgroup holds the Sentry, its gofer and the
// systrap stubs: the host processes in which the sandbox's own processes
// run. A stub's page faults and its populating mmaps commit guest memory,
// charged to the stub's cgroup; the Sentry's charges are its own heap, the
// guest's page cache and tmpfs, and guest memory it writes itself (read(2)
// into a fresh buffer). When one cgroup holds them all, a guest that
// commits past the limit in one syscall gets the host to OOM-kill the
// Sentry and the whole sandbox dies (a stub killed instead takes the
// Sentry with it: systrap cannot survive a lost stub).
//
// So the stubs move into a child cgroup <memory>/sbx/<id>/guest with the
// sandbox's limit and the host OOM killer disabled: past it, the stub that
// faults waits (the populating mmap fails softly), while the Sentry, with
// sentryHeadroom more in the parent, keeps running, and so does the agent,
// whose stub stays in the parent (found by the page its OOM guard maps at
// oomguard.MarkerAddr). The guard then SIGKILLs the largest process; the
// guestWatch raises the guest's limit a little at a time so that the
// waiting stubs return to the Sentry, which kills the process and frees
// its memory, and puts it back once usage is under the limit again.
//
// What the Sentry commits itself is charged to the parent: sbx's gVisor
// patch (third_party/gvisor/patches/20-sentry-memory-limit.patch) makes the
// Sentry refuse guest memory past the sandbox's limit, so that only its own
// heap (pipe and socket buffers among it) can still take the parent past
// its limit and get the Sentry OOM-killed (docs/SECURITY.md).
const guestDir = "guest"

// sentryHeadroom is what the parent cgroup allows beyond the guest's limit:
// the Sentry's own memory (~30-45 MiB), the guest's page cache and the
// guestWatch's raise.
func sentryHeadroom(limit int64) int64 { return 64<<20 + limit/8 }

// guestSplit reports whether runsc sandboxes get a guest cgroup here: the
// memory controller must be cgroup v1 (pure v2 has no oom_kill_disable).
func (r *Runtime) guestSplit() bool {
	if r.kind != "runsc" || r.v2 {
		return false
	}
	_, err := os.Stat(filepath.Join(cgroupRoot, "memory", "memory.oom_control"))
	return err == nil
}

func (r *Runtime) memoryCgroup(id string) string {
	return filepath.Join(cgroupRoot, "memory", "sbx", id)
}

// splitGuest makes id's guest cgroup (limit = the spec's memory limit, host
// OOM killer off), raises the parent by sentryHeadroom and the disk quota
// (diskmem.go) and moves the stubs of the Sentry sentry into the guest
// cgroup. Idempotent (re-adoption).
func (r *Runtime) splitGuest(id string, sentry int) (limit int64, err error) {
	limit, disk, err := bundleLimits(r.bundle(id))
	if err != nil {
		return 0, err
	}
	parent := r.memoryCgroup(id)
	guest := filepath.Join(parent, guestDir)
	err = os.Mkdir(guest, 0o755)
	switch {
	case err == nil:
		if err := setMemoryLimit(guest, limit); err != nil {
			return 0, err
		}
	case !errors.Is(err, fs.ErrExist):
		return 0, fmt.Errorf("oci: guest cgroup: %w", err)
	} // re-adopted: a raised limit stays until the watch restores it
	if err := writeCgroup(guest, "memory.oom_control", "1"); err != nil {
		return 0, err
	}
	if err := setMemoryLimit(parent, limit+sentryHeadroom(limit)+disk); err != nil {
		return 0, err
	}
	return limit, moveStubs(parent, guest, sentry)
}

// moveStubs moves the Sentry's stubs and their sysmsg threads (its
// descendants) into guest, all but the agent's (agentStub), round after
// round until a round moves none: stubs are forked by the first one, and a
// child starts in its forker's cgroup.
func moveStubs(parent, guest string, sentry int) error {
	for round := 0; round < 50; round++ {
		moved := 0
		for _, pid := range cgroupProcs(parent) {
			if pid == sentry || !descends(pid, sentry) || agentStub(pid) {
				continue
			}
			if err := writeCgroup(guest, "cgroup.procs", strconv.Itoa(pid)); err == nil {
				moved++
			} else if !errors.Is(err, syscall.ESRCH) {
				return err
			}
		}
		if moved == 0 {
			return nil
		}
	}
	return fmt.Errorf("oci: stubs of %d keep appearing in %s", sentry, parent)
}

// freeAgent moves the agent's stub from guest to parent: its marker may be
// mapped only after the split (a create splits before the agent runs).
func freeAgent(guest, parent string) {
	for _, pid := range cgroupProcs(guest) {
		if agentStub(pid) {
			_ = writeCgroup(parent, "cgroup.procs", strconv.Itoa(pid))
		}
	}
}

// agentStub reports whether pid maps oomguard.MarkerAddr: the stub (or a
// sysmsg thread) of the agent's address space.
func agentStub(pid int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rng, _, _ := strings.Cut(s.Text(), " ")
		lo, hi, _ := strings.Cut(rng, "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && a <= oomguard.MarkerAddr && oomguard.MarkerAddr < b {
			return true
		}
	}
	return false
}

// descends reports whether pid's parent chain reaches anc within 4 steps.
func descends(pid, anc int) bool {
	for i := 0; i < 4 && pid > 1; i++ {
		if pid, _ = statOf(pid); pid == anc {
			return true
		}
	}
	return false
}

// statOf reads a process's parent pid and start time (/proc/<pid>/stat).
func statOf(pid int) (ppid int, start uint64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	start, _ = strconv.ParseUint(f[19], 10, 64)
	return ppid, start
}

func cgroupProcs(dir string) []int {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// setMemoryLimit sets a v1 cgroup's memory and memory+swap limits to n, in
// the order the kernel accepts (memsw >= memory at every step).
func setMemoryLimit(dir string, n int64) error {
	v := strconv.FormatInt(n, 10)
	cur, _ := readInt(filepath.Join(dir, "memory.limit_in_bytes"))
	files := []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"}
	if n > cur {
		files[0], files[1] = files[1], files[0]
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			continue // no swap accounting
		}
		if err := writeCgroup(dir, f, v); err != nil {
			return err
		}
	}
	return nil
}

func writeCgroup(dir, file, v string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0); err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	return nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
