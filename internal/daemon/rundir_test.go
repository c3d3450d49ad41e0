package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRunDir: a fresh data dir gets a tmpfs at <data-dir>/run, kept (not
// stacked) on the next start; a data dir of the earlier layout keeps it while
// a sandbox's state is there, and loses its empty leftovers otherwise.
func TestRunDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (mount)")
	}
	log := slog.New(slog.DiscardHandler)
	data := t.TempDir()
	t.Cleanup(func() { _ = syscall.Unmount(filepath.Join(data, "run"), syscall.MNT_DETACH) })
	for i := 0; i < 2; i++ {
		dir, err := mountRunDir(data, log)
		if err != nil || dir != filepath.Join(data, "run") {
			t.Fatalf("run dir %q, %v", dir, err)
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil || st.Type != 0x01021994 { // TMPFS_MAGIC
			t.Fatalf("run dir is not a tmpfs: %#x, %v", st.Type, err)
		}
	}
	if n := countMounts(t, filepath.Join(data, "run")); n != 1 {
		t.Fatalf("%d mounts at the run dir after two starts, want 1", n)
	}

	legacy := t.TempDir()
	for _, d := range []string{"sandboxes/abc/rootfs", "runtime/crun", "runtime/bundles-crun"} {
		if err := os.MkdirAll(filepath.Join(legacy, d), 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if dir, err := mountRunDir(legacy, log); err != nil || dir != legacy {
		t.Fatalf("data dir with a sandbox of the earlier layout: run dir %q, %v; want the data dir itself", dir, err)
	}
	if err := os.RemoveAll(filepath.Join(legacy, "sandboxes", "abc")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(filepath.Join(legacy, "run"), syscall.MNT_DETACH) })
	if dir, err := mountRunDir(legacy, log); err != nil || dir != filepath.Join(legacy, "run") {
		t.Fatalf("empty earlier layout: run dir %q, %v", dir, err)
	}
	for _, d := range []string{"sandboxes", "runtime"} {
		if _, err := os.Stat(filepath.Join(legacy, d)); err == nil {
			t.Errorf("empty %s of the earlier layout left behind", d)
		}
	}
}

func countMounts(t *testing.T, at string) int {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == at {
			n++
		}
	}
	return n
}
