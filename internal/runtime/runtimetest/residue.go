package runtimetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// CheckNoResidue asserts that a deleted sandbox left nothing: the backend
// does not know it, no process runs in it or for it, no cgroup is left.
func CheckNoResidue(t *testing.T, rt runtime.Runtime, sb runtime.Sandbox, rootfs string) {
	t.Helper()
	ctx := context.Background()
	if _, err := rt.Load(ctx, sb.ID()); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Load after Delete = %v, want ErrNotFound", err)
	}
	if ids, err := rt.List(ctx); err != nil || slices.Contains(ids, sb.ID()) {
		t.Errorf("List after Delete = %v, %v", ids, err)
	}
	if left := lingering(sb.ID(), rootfs); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
	for _, p := range cgroupDirs(sb.ID()) {
		t.Errorf("cgroup left: %s", p)
	}
	for _, p := range sb.CgroupPaths() {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("cgroup left: %s", p)
		}
	}
}

// lingering is processesOf(id, rootfs) once none is left or after 5 s:
// processes a runtime forked exit, and are reaped by their new parent,
// asynchronously.
func lingering(id, rootfs string) []string {
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if left = processesOf(id, rootfs); len(left) == 0 {
			break
		}
	}
	return left
}

// processesOf lists host processes (not zombies) whose command line names
// id or whose root is rootfs.
func processesOf(id, rootfs string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		stat, _ := os.ReadFile(filepath.Join(dir, "stat"))
		if i := strings.LastIndexByte(string(stat), ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		root, _ := os.Readlink(filepath.Join(dir, "root"))
		if strings.Contains(string(cmd), id) || root == rootfs {
			out = append(out, e.Name()+":"+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// cgroupDirs lists cgroup directories named id under any hierarchy.
func cgroupDirs(id string) []string {
	var out []string
	for _, pat := range []string{"/sys/fs/cgroup/*/sbx/" + id, "/sys/fs/cgroup/sbx/" + id, "/sys/fs/cgroup/*/sbx/*/" + id} {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	return out
}

// ancestry returns pid's parent chain up to (not including) pid 1.
func ancestry(pid int) []int {
	var chain []int
	for pid > 1 && len(chain) < 64 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			break
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			break
		}
		pid, _ = strconv.Atoi(f[1])
		chain = append(chain, pid)
	}
	return chain
}
