package layer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxStacked bounds how many mounts unmountLayer takes off one point: more
// than that stacked on a layer's point is not a layer it made.
const maxStacked = 4

// errUnknownMount stops the walk of checkUnmounted at a mount point.
var errUnknownMount = errors.New("a mount point under the layer")

// removeLayer is Cleanup for a layer's directory: it unmounts the points a
// layer has (unmountLayer) without reading the mount table, whose read
// costs the kernel a line per mount of the host (three per live sandbox),
// and falls back to Cleanup's reading of it when anything else is mounted
// there. Like Cleanup it never deletes through a mount point.
func removeLayer(dir string) error { return removeLayerWith(dir, nil, nil) }

// removeLayerWith is removeLayer with two hooks (each may be nil): before
// runs on the resolved directory before its unmount, after runs once it is
// unmounted (or missing) and before it is deleted, and its error stops the
// deletion.
func removeLayerWith(dir string, before func(real string), after func() error) error {
	real, err := realPath(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return runHook(after)
	case err != nil:
		return errors.Join(runHook(after), Cleanup(dir))
	}
	if before != nil {
		before(real)
	}
	if !unmountLayer(real) {
		if err := UnmountAll(real); err != nil {
			return fmt.Errorf("remove layer %s: %w", real, err)
		}
	}
	if err := runHook(after); err != nil {
		return err
	}
	if err := os.RemoveAll(real); err != nil {
		return Cleanup(dir)
	}
	return nil
}

func runHook(f func() error) error {
	if f == nil {
		return nil
	}
	return f()
}

// unmountLayer unmounts a layer's overlay, then what holds its upper
// (tmpfs or disk), then anything mounted on dir itself, each as often as it
// is stacked, deciding by statx (STATX_ATTR_MOUNT_ROOT) rather than the
// mount table; then it checks that no mount point is left under dir. It
// reports false when it cannot say so (a statx without that attribute, an
// unmount that failed, another mount found): the caller then unmounts by
// the mount table, which sees every mount.
func unmountLayer(dir string) bool {
	l := paths(dir)
	for _, p := range []string{l.Rootfs, l.tmpfs(), l.Dir} {
		if !unmountStacked(p) {
			return false
		}
	}
	return checkUnmounted(dir)
}

// unmountStacked unmounts p until it is no mount point; false when statx
// cannot tell, an unmount fails, or more than maxStacked are on it.
func unmountStacked(p string) bool {
	for range maxStacked + 1 {
		root, known := mountRoot(p)
		switch {
		case !known:
			return false
		case !root:
			return true
		case unmount(p) != nil:
			return false
		}
	}
	return false
}

// checkUnmounted walks dir (what is left once the layer's mounts are off:
// a few empty directories) and reports whether no entry is a mount point.
func checkUnmounted(dir string) bool {
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if root, known := mountRoot(p); root || !known {
			return errUnknownMount
		}
		return nil
	})
	return err == nil
}

// mountRoot reports whether p is the root of a mount, by statx; known is
// false when statx cannot say (an error other than p missing, or a kernel
// before 5.8 without STATX_ATTR_MOUNT_ROOT).
func mountRoot(p string) (root, known bool) {
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_BASIC_STATS, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return false, true
	case err != nil || st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0:
		return false, false
	}
	return st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, true
}
