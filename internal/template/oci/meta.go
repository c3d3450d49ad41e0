package oci

import (
	"archive/tar"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// setMeta sets owner, mode and (if xattrs) the allowed PAX xattrs of the
// entry open as fd, in that order: chown clears setuid bits and file
// capabilities, so they come after it.
func (u *unpacker) setMeta(fd int, rel string, hdr *tar.Header, xattrs bool) error {
	if err := chown(fd, rel, hdr); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, uint32(hdr.Mode&0o7777)); err != nil {
		return &os.PathError{Op: "fchmod", Path: rel, Err: err}
	}
	if xattrs {
		return u.setXattrs(fd, rel, hdr)
	}
	return nil
}

// chown sets the owner of the entry open as fd (O_PATH descriptors of
// symlinks included: the link itself changes).
func chown(fd int, rel string, hdr *tar.Header) error {
	if hdr.Uid < 0 || hdr.Gid < 0 || hdr.Uid >= 1<<32-1 || hdr.Gid >= 1<<32-1 {
		return fmt.Errorf("%s: owner %d:%d out of range: %w", rel, hdr.Uid, hdr.Gid, ErrUnsafeLayer)
	}
	err := unix.Fchownat(fd, "", hdr.Uid, hdr.Gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return &os.PathError{Op: "fchownat", Path: rel, Err: err}
	}
	return nil
}

// setXattrs sets the xattrs from hdr's PAX records that a layer may carry:
// "user.*" and "security.capability"; others are skipped with a log line.
func (u *unpacker) setXattrs(fd int, rel string, hdr *tar.Header) error {
	for key, val := range hdr.PAXRecords {
		name, ok := strings.CutPrefix(key, "SCHILY.xattr.")
		if !ok {
			continue
		}
		if !strings.HasPrefix(name, "user.") && name != "security.capability" {
			u.logf("skipped xattr %s of %s", name, rel)
			continue
		}
		err := unix.Fsetxattr(fd, name, []byte(val), 0)
		if err == unix.ENOTSUP {
			u.logf("skipped xattr %s of %s: not supported here", name, rel)
			continue
		}
		if err != nil {
			return &os.PathError{Op: "setxattr " + name, Path: rel, Err: err}
		}
	}
	return nil
}

// dirTimes are a directory's times, applied after the whole layer.
type dirTimes struct {
	rel string
	ts  [2]unix.Timespec
}

// setDirTimes applies the directories' times, deepest last written first.
// A directory a later entry replaced is skipped.
func (u *unpacker) setDirTimes() error {
	for i := len(u.dirs) - 1; i >= 0; i-- {
		d := u.dirs[i]
		fd, err := openBeneath(u.root, d.rel, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if errIs(err, unix.ENOENT, unix.ENOTDIR, unix.ELOOP) {
			continue
		}
		if err != nil {
			return err
		}
		err = setTimes(fd, d.rel, d.ts, 0)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// setTimes sets atime and mtime of the entry open as fd.
func setTimes(fd int, rel string, ts [2]unix.Timespec, flags int) error {
	if err := unix.UtimesNanoAt(fd, "", ts[:], unix.AT_EMPTY_PATH|flags); err != nil {
		return &os.PathError{Op: "utimensat", Path: rel, Err: err}
	}
	return nil
}

// timespecs are hdr's access and modification times (atime defaults to
// mtime).
func timespecs(hdr *tar.Header) [2]unix.Timespec {
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = hdr.ModTime
	}
	return [2]unix.Timespec{timespec(atime), timespec(hdr.ModTime)}
}

func timespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		return unix.Timespec{}
	}
	return unix.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}
