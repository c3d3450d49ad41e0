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
// retries are many), and still removes every directory.
func TestReapCgroupsListsOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	v2, _ := cgroupMode()
	r := &Runtime{cfg: Config{Timeout: 5 * time.Second}, v2: v2}
	id := "sbx-reap-test-" + filepath.Base(t.TempDir())
	base := filepath.Join(cgroupRoot, "sbx", id)
	if !v2 {
		base = filepath.Join(cgroupRoot, "cpuacct", "sbx", id)
	}
	child := filepath.Join(base, "child") // keeps base busy until it goes
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Skipf("no cgroup to make: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(child); _ = os.Remove(base) })
	var lists atomic.Int32
	orig := glob
	glob = func(p string) ([]string, error) { lists.Add(1); return orig(p) }
	t.Cleanup(func() { glob = orig })
	r.allCgroups(id)
	perListing := lists.Swap(0)
	done := make(chan error, 1)
	go func() { done <- r.reapCgroups(context.Background(), id) }()
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
