package network

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNetNSDirSurvivesIPNetnsAdd: after New, what `ip netns add` does to the
// netns directory (iproute2: make it shared; if it is not a mount point,
// bind-mount it over itself first) must not hide the netns files made
// before, so their teardown still leaves nothing.
func TestNetNSDirSurvivesIPNetnsAdd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	cfg := testConfig(61)
	cfg.NetNSDir = filepath.Join(t.TempDir(), "netns")
	// Runs after testManager's cleanup, whose New binds the dir again.
	t.Cleanup(func() { _ = unix.Unmount(cfg.NetNSDir, unix.MNT_DETACH) })
	m := testManager(t, cfg)
	l := setup(t, m, "nsdiraaaaaaaaaaaaaaa")
	iproute2NetnsAdd(t, cfg.NetNSDir)
	if err := m.Teardown(context.Background(), l.ID); err != nil {
		t.Fatalf("teardown after ip netns add: %v", err)
	}
	if _, err := os.Stat(l.NetNSPath); !os.IsNotExist(err) {
		t.Fatalf("netns file left: %v", err)
	}
}

// iproute2NetnsAdd does to dir what `ip netns add` does to /run/netns.
func iproute2NetnsAdd(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, ""); err == nil {
		return
	}
	if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}
