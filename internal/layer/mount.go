package layer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Cleanup unmounts everything mounted at or under dir (deepest first; lazily
// when busy) and removes dir. It never deletes through a mount point: if a
// mount is still there after unmounting, it fails and removes nothing. A
// missing dir is not an error. Use it to reap layers after a crash.
func Cleanup(dir string) error {
	dir, err := realPath(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cleanup layer: %w", err)
	}
	if err := UnmountAll(dir); err != nil {
		return fmt.Errorf("cleanup layer %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cleanup layer %s: %w", dir, err)
	}
	return nil
}

// CleanupMatching is Cleanup for every entry of dir whose name match
// accepts (what interrupted writes left, say). A missing dir is nothing to
// clean.
func CleanupMatching(dir string, match func(name string) bool) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if match(e.Name()) {
			errs = append(errs, Cleanup(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// UnmountAll unmounts every mount at or under dir, deepest first, and checks
// that none is left. dir must be absolute with symlinks resolved.
func UnmountAll(dir string) error {
	mps, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mps {
		errs = append(errs, unmount(mp))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if left, err := mountsUnder(dir); err != nil || len(left) > 0 {
		return errors.Join(err, fmt.Errorf("still mounted: %v", left))
	}
	return nil
}

// unmount unmounts p, detaching it lazily if it is busy. Already unmounted is
// not an error.
func unmount(p string) error {
	err := unix.Unmount(p, unix.UMOUNT_NOFOLLOW)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(p, unix.UMOUNT_NOFOLLOW|unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", p, err)
	}
	return nil
}

// isMountPoint reports whether p is a mount point in this mount namespace:
// by statx's STATX_ATTR_MOUNT_ROOT (Linux 5.8+: one call, whatever the
// size of the mount table, which telemetry asks about every sandbox each
// tick), else by the mount table.
func isMountPoint(p string) bool {
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_BASIC_STATS, &st)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return false
	case err == nil && st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0:
		return st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	}
	return inMountTable(p)
}

// inMountTable reports whether /proc/self/mountinfo lists p.
func inMountTable(p string) bool {
	mps, err := mountPoints()
	if err != nil {
		return false
	}
	for _, mp := range mps {
		if mp == p {
			return true
		}
	}
	return false
}

// mountsUnder returns the mount points at or under dir, deepest first (a
// point mounted twice appears twice).
func mountsUnder(dir string) ([]string, error) {
	mps, err := mountPoints()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, mp := range mps {
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// mountPoints lists the mount points of /proc/self/mountinfo, most recent last.
func mountPoints() ([]string, error) {
	b, err := readMountTable()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			out = append(out, unescapeOctal(f[4]))
		}
	}
	return out, nil
}

// readMountTable reads /proc/self/mountinfo (a variable for the tests that
// count its reads).
var readMountTable = func() ([]byte, error) { return os.ReadFile("/proc/self/mountinfo") }

// unescapeOctal undoes the kernel's \NNN escaping of mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
