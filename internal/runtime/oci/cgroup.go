package oci

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
// with every directory below it (the runsc guest cgroup, or whatever a
// runtime nested there), children before their parents.
func (r *Runtime) allCgroups(id string) []string {
	var out []string
	for _, p := range r.idPatterns(id) {
		m, _ := glob(p)
		for _, dir := range m {
			out = append(out, subtreeOf(dir)...)
		}
	}
	return out
}

// idPatterns are the glob patterns of id's cgroup directories: the unified
// one on pure v2, one per controller otherwise.
func (r *Runtime) idPatterns(id string) []string {
	if r.v2 {
		return []string{filepath.Join(cgroupRoot, "sbx", id)}
	}
	return []string{filepath.Join(cgroupRoot, "*", "sbx", id)}
}

// subtree is dir and every directory below it, deepest first (the order
// rmdir needs). Symbolic links are not followed (cgroupfs has none).
func subtree(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	slices.Reverse(out) // WalkDir is lexical pre-order: reversed, children precede parents
	return out
}

// glob is filepath.Glob and subtreeOf subtree (variables for the tests that
// count the listings).
var glob, subtreeOf = filepath.Glob, subtree

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

// killProcs kills every process in the cgroup dir: at once by cgroup.kill
// where the kernel has it (cgroup v2, Linux 5.14+: the whole subtree, forks
// included), else by SIGKILL to each pid listed in cgroup.procs (the caller
// retries until the directory is empty and removed).
func killProcs(dir string) {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
		return
	}
	for _, pid := range cgroupProcs(dir) {
		if pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
