package oci

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestReapCgroupsListsOnce: a reap that must wait for a busy cgroup lists
// the hierarchies once, not on every 10 ms retry (in a burst of kills the
// retries are many), and still removes every directory, nested ones
// included.
func TestReapCgroupsListsOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	v2, _ := cgroupMode()
	r := &Runtime{cfg: Config{Timeout: 5 * time.Second}, v2: v2}
	// The temp dir's parent has a random suffix: its base ("001") alone
	// made one id for every process, and two running this test at once
	// (a helper beside CI) took each other's cgroups.
	id := "sbx-reap-test-" + filepath.Base(filepath.Dir(t.TempDir()))
	base := filepath.Join(cgroupRoot, "sbx", id)
	if !v2 {
		base = filepath.Join(cgroupRoot, "cpuacct", "sbx", id)
	}
	if err := os.MkdirAll(filepath.Join(base, "nested", "deeper"), 0o755); err != nil {
		t.Skipf("no cgroup to make: %v", err)
	}
	// child keeps base busy until it goes: made once the reap has listed
	// base's subtree, so the reap does not remove it as it does "nested".
	child := filepath.Join(base, "child")
	t.Cleanup(func() { _ = os.Remove(child); _ = os.RemoveAll(base) })
	var lists atomic.Int32
	var armed, made atomic.Bool
	childMade := make(chan struct{})
	orig, origWalk := glob, subtreeOf
	glob = func(p string) ([]string, error) { lists.Add(1); return orig(p) }
	subtreeOf = func(dir string) []string {
		out := origWalk(dir)
		if armed.Load() && !made.Swap(true) {
			_ = os.Mkdir(child, 0o755)
			close(childMade)
		}
		return out
	}
	t.Cleanup(func() { glob, subtreeOf = orig, origWalk })
	if got := r.allCgroups(id); len(got) != 3 || got[len(got)-1] != base {
		t.Fatalf("allCgroups = %v, want base's subtree, children first", got)
	}
	perListing := lists.Swap(0)
	done, reaped := make(chan error, 1), make(chan struct{})
	armed.Store(true)
	go func() { done <- r.reapCgroups(context.Background(), id); close(reaped) }()
	t.Cleanup(func() { <-reaped }) // before glob is put back
	// The reap has listed (a loaded machine may take longer than the
	// 100 ms this test once slept for the whole of it: child was not
	// there yet, 1 run in 150).
	select {
	case <-childMade:
	case <-time.After(4 * time.Second):
		t.Fatal("the reap never listed the cgroups")
	}
	time.Sleep(100 * time.Millisecond) // ≈ 10 retries
	if err := os.Remove(child); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Fatalf("%s left: %v", base, err)
	}
	if n := lists.Load(); n != perListing {
		t.Errorf("%d globs, %d per listing of the hierarchies: listed more than once", n, perListing)
	}
}
