package oci

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sbx-dev/sbx/internal/runtime"
)

var _ runtime.StrayReaper = (*Runtime)(nil)

// Strays implements runtime.StrayReaper: the ids of the sandbox cgroups
// under the "sbx" parent that hold a process of this daemon's. Every
// daemon on a host shares that parent, so a cgroup counts only when one of
// its processes names a path of this daemon's for its id (ownedBy): runsc's
// gofer and sandbox their --root and --bundle, a crun or runc container its
// root overlay's upperdir. An empty cgroup or another daemon's is never
// listed. A sandbox can forge such a path only in its own cgroup, so at
// worst it gets itself reaped.
func (r *Runtime) Strays(context.Context) ([]string, error) {
	pat := filepath.Join(cgroupRoot, "*", "sbx", "*")
	if r.v2 {
		pat = filepath.Join(cgroupRoot, "sbx", "*")
	}
	dirs, err := glob(pat)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		id := filepath.Base(dir)
		if validID(id) && !seen[id] && r.owns(id) {
			seen[id] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// ReapStray implements runtime.StrayReaper: it kills every process in id's
// cgroups and removes them (reapCgroups), with no runtime state to go by,
// if the processes are this daemon's (owns): cgroups whose processes name
// none of its paths are left alone (a warning), whoever listed id, and
// empty ones are only removed.
func (r *Runtime) ReapStray(ctx context.Context, id string) error {
	if r.populated(id) && !r.owns(id) {
		r.cfg.Log.Warn("not reaping a sandbox cgroup whose processes name no path of this daemon's", "sandbox", id, "dir", r.cfg.OwnerDir)
		return nil
	}
	return r.reapCgroups(ctx, id)
}

// populated says whether any of id's cgroups holds a process.
func (r *Runtime) populated(id string) bool {
	for _, dir := range r.allCgroups(id) {
		if len(cgroupProcs(dir)) > 0 {
			return true
		}
	}
	return false
}

// owns says whether a process in id's cgroups names a path under the
// daemon's OwnerDir that has id as a component.
func (r *Runtime) owns(id string) bool {
	for _, dir := range r.allCgroups(id) {
		for _, pid := range cgroupProcs(dir) {
			if procNames(pid, r.cfg.OwnerDir, id) {
				return true
			}
		}
	}
	return false
}

// procNames says whether pid's command line or mount table names a path
// under dir with id as a component.
func procNames(pid int, dir, id string) bool {
	base := filepath.Join("/proc", strconv.Itoa(pid))
	for _, f := range []string{"cmdline", "mountinfo"} {
		if b, err := os.ReadFile(filepath.Join(base, f)); err == nil && namesUnder(string(b), dir, id) {
			return true
		}
	}
	return false
}

// namesUnder says whether text holds a path that starts with dir + "/" and
// has id as one of its components after it. Paths start at the text's start
// or after a separator and end at one: a NUL, a space, a comma, a colon, an
// equals sign or a newline (argv, mountinfo's fields and options).
func namesUnder(text, dir, id string) bool {
	const seps = "\x00 ,:=\n"
	prefix := filepath.Clean(dir) + "/"
	for i := 0; ; {
		j := strings.Index(text[i:], prefix)
		if j < 0 {
			return false
		}
		start := i + j
		i = start + len(prefix)
		if start > 0 && !strings.ContainsRune(seps, rune(text[start-1])) {
			continue
		}
		rest := text[i:]
		if end := strings.IndexAny(rest, seps); end >= 0 {
			rest = rest[:end]
		}
		if slices.Contains(strings.Split(rest, "/"), id) {
			return true
		}
	}
}
