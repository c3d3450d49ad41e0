package layer

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIsMountPoint: the statx answer agrees with the mount table for a
// tmpfs, a directory bound on itself (same filesystem: a device
// comparison would miss it), a plain directory, a file and a missing path.
func TestIsMountPoint(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	tmpfs, bind, plain := filepath.Join(dir, "tmpfs"), filepath.Join(dir, "bind"), filepath.Join(dir, "plain")
	for _, d := range []string{tmpfs, bind, plain} {
		must(t, os.Mkdir(d, 0o700))
	}
	must(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o600))
	must(t, unix.Mount("tmpfs", tmpfs, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(tmpfs, unix.MNT_DETACH) })
	must(t, unix.Mount(bind, bind, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(bind, unix.MNT_DETACH) })
	for p, want := range map[string]bool{tmpfs: true, bind: true, plain: false, filepath.Join(dir, "file"): false, filepath.Join(dir, "missing"): false} {
		if got, table := isMountPoint(p), inMountTable(p); got != want || table != want {
			t.Errorf("%s: isMountPoint %v, mount table %v, want %v", p, got, table, want)
		}
	}
}
