package volume

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// makeImage writes an ext4 filesystem of sizeMB MiB to img, its blocks
// allocated up front (fallocate; mkfs must not discard them) so that the
// host disk cannot run out under a volume within its quota. Its root is
// owned by the sandboxes' user, mode 0755, with no lost+found.
func makeImage(ctx context.Context, img string, sizeMB int64) error {
	f, err := os.OpenFile(img, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, sizeMB<<20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("allocate %d MiB: %w", sizeMB, err)
	}
	out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-m", "0",
		"-E", fmt.Sprintf("nodiscard,lazy_itable_init=1,root_owner=%d:%d", DefaultUID, DefaultGID), img).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// mountImage loop-mounts img at dir (nosuid, nodev) unless something is
// mounted there already.
func mountImage(ctx context.Context, img, dir string) error {
	if mounted(dir) {
		return nil
	}
	out, err := exec.CommandContext(ctx, "mount", "-t", "ext4", "-o", "loop,nosuid,nodev,noatime", img, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mount volume image: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// firstMount prepares a fresh volume's root: lost+found goes (users see
// the volume's root as theirs).
func firstMount(dir string) error {
	return os.Remove(filepath.Join(dir, "lost+found"))
}

// mounted reports whether dir is a mount point (its device differs from
// its parent's).
func mounted(dir string) bool {
	var a, b unix.Stat_t
	if unix.Lstat(dir, &a) != nil || unix.Lstat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// unmount detaches whatever is mounted at dir (a sandbox still holding a
// bind of it keeps its own reference).
func unmount(dir string) error {
	for mounted(dir) {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	return nil
}
