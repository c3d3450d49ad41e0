package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// runDirName is the directory under the data dir for state that lives
// exactly as long as the host is up: the runtimes' --root state, the OCI
// bundles and each sandbox's mount points. Every create and delete makes and
// removes a dozen files there; on a disk file system that churn costs CPU
// in the inode allocator (ext4 without a journal scans past every inode
// deleted in the last minute) and journal writes, so the daemon keeps it on
// a tmpfs of its own.
const runDirName = "run"

// runDirOptions bound the tmpfs: a sandbox keeps about 50 KiB there.
const runDirOptions = "size=512m,mode=0711"

// mountRunDir returns <dataDir>/run, mounting a tmpfs there unless the
// directory already is a mount point (a restarted daemon keeps what it
// holds: the running sandboxes' state). After a reboot it is an empty
// directory again, like /run. If the mount fails the directory is used as it
// is, on the data dir's file system, with a warning.
func mountRunDir(dataDir string, log *slog.Logger) (string, error) {
	if legacyLayout(dataDir) {
		log.Warn("data dir holds sandboxes of the layout before <data-dir>/run: keeping it (creates cost more CPU) until none is left",
			"data-dir", dataDir)
		return dataDir, nil
	}
	dir := filepath.Join(dataDir, runDirName)
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", err
	}
	mounted, err := isMountPoint(dir)
	if err != nil || mounted {
		return dir, err
	}
	if err := syscall.Mount("sbx-run", dir, "tmpfs", syscall.MS_NODEV|syscall.MS_NOSUID, runDirOptions); err != nil {
		log.Warn("run dir stays on the data dir's file system (creates cost more CPU)", "dir", dir, "err", err)
	}
	return dir, nil
}

// isMountPoint reports whether dir is on another device than its parent.
func isMountPoint(dir string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return false, fmt.Errorf("run dir: %w", err)
	}
	if err := syscall.Stat(filepath.Dir(dir), &parent); err != nil {
		return false, fmt.Errorf("run dir: %w", err)
	}
	return st.Dev != parent.Dev, nil
}

// legacyDirs are the per-sandbox directories of the layout before the run
// dir, children before parents.
var legacyDirs = []string{"sandboxes", "runtime/runsc", "runtime/crun", "runtime/runc",
	"runtime/bundles-runsc", "runtime/bundles-crun", "runtime/bundles-runc", "runtime"}

// legacyLayout reports whether dataDir still holds sandboxes in the layout
// before the run dir (<data-dir>/runtime and <data-dir>/sandboxes); those
// must be re-adopted where they are. Empty leftovers of it are removed
// (runsc's null netns pin first), so the next start uses the run dir.
func legacyLayout(dataDir string) bool {
	pin := filepath.Join(dataDir, "runtime", "runsc", "null-netns")
	if err := syscall.Unmount(pin, syscall.MNT_DETACH); err == nil || err == syscall.EINVAL {
		_ = os.Remove(pin)
	}
	for _, d := range legacyDirs {
		_ = os.Remove(filepath.Join(dataDir, d)) // only empty directories go
	}
	for _, d := range []string{"sandboxes", "runtime"} {
		if _, err := os.Lstat(filepath.Join(dataDir, d)); err == nil {
			return true
		}
	}
	return false
}

// unmountRunDir undoes mountRunDir once --reap-all-and-exit has emptied the
// node: runsc's null netns pin and the run tmpfs are unmounted, so the data
// dir can be removed. Only call it when no sandbox of this data dir is left.
// The nftables table stays: it is the net prefix's, which other daemons may
// share.
func unmountRunDir(dataDir string) error {
	run := filepath.Join(dataDir, runDirName)
	var errs []error
	for _, p := range []string{filepath.Join(run, "runtime", "runsc", "null-netns"), run} {
		err := syscall.Unmount(p, syscall.MNT_DETACH)
		if err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
