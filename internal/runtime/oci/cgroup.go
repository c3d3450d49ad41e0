package oci

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const cgroupRoot = "/sys/fs/cgroup"

// cgroupMode detects pure v2 and hybrid (v1 + a cgroup2 mount) hosts.
func cgroupMode() (v2, hybrid bool) {
	var st syscall.Statfs_t
	if syscall.Statfs(cgroupRoot, &st) == nil && st.Type == 0x63677270 { // CGROUP2_SUPER_MAGIC
		return true, false
	}
	if syscall.Statfs(cgroupRoot+"/unified", &st) == nil && st.Type == 0x63677270 {
		return false, true
	}
	return false, false
}

// cgroupPaths returns the cgroup directories of id that hold figures the
// daemon reads: the unified one on v2, existing memory/cpu/cpuacct/pids
// directories on v1.
func (r *Runtime) cgroupPaths(id string) map[string]string {
	rel := filepath.Join("sbx", id)
	if r.v2 {
		return map[string]string{"": filepath.Join(cgroupRoot, rel)}
	}
	out := map[string]string{}
	for _, c := range []string{"memory", "cpu", "cpuacct", "pids"} {
		p := filepath.Join(cgroupRoot, c, rel)
		if _, err := os.Stat(p); err == nil {
			out[c] = p
		}
	}
	return out
}

// allCgroups lists every existing cgroup directory of id, in any hierarchy,
// children (the runsc guest cgroup) before their parents.
func (r *Runtime) allCgroups(id string) []string {
	pats := []string{filepath.Join(cgroupRoot, "sbx", id)}
	if !r.v2 {
		pats = append([]string{filepath.Join(cgroupRoot, "memory", "sbx", id, guestDir)},
			append(pats, filepath.Join(cgroupRoot, "*", "sbx", id))...)
	}
	var out []string
	for _, p := range pats {
		m, _ := glob(p)
		out = append(out, m...)
	}
	return out
}

// glob is filepath.Glob (a variable for the tests that count the listings).
var glob = filepath.Glob

// reapCgroups SIGKILLs whatever still runs in id's cgroups (a runtime that
// lost its state must not leave processes behind) and removes the
// directories, retrying the busy ones every 10 ms while the killed
// processes exit; bounded by ctx and the backend's timeout. The hierarchies
// are listed once: the sandbox is dead, nothing makes its directories anew,
// and in a burst of kills the retries are many.
func (r *Runtime) reapCgroups(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	dirs := r.allCgroups(id)
	for {
		var busy []string // in order: children before their parents
		for _, dir := range dirs {
			killProcs(dir)
			if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
				busy = append(busy, dir)
			}
		}
		if len(busy) == 0 {
			return nil
		}
		dirs = busy
		select {
		case <-ctx.Done():
			return fmt.Errorf("oci: cgroups of %s still busy: %v: %w", id, busy, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// killProcs SIGKILLs every process listed in dir/cgroup.procs.
func killProcs(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
