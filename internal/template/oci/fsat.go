package oci

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// The file-system primitives of Unpack. Every path is relative to a
// directory descriptor of the layer root and walked by openat2(2) with
// RESOLVE_BENEATH, so neither "..", an absolute name nor a symlink can
// take a walk out of the layer. Names handed to the *at calls that create
// (mkdirat, mknodat, symlinkat, linkat) are single components (no "/",
// never "." or "..") under a parent descriptor opened that way, and those
// calls never follow a final symlink.

const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens rel (a cleaned relative path, "." for the root) under
// dirfd. Pass O_NOFOLLOW in flags when the final component must not be a
// symlink. An attempt to leave dirfd's tree is ErrUnsafeLayer.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: resolveBeneath}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if (err == unix.EINTR || err == unix.EAGAIN) && try < 8 {
			continue
		}
		if err == unix.EXDEV {
			return -1, fmt.Errorf("%s: resolves outside the layer: %w", rel, ErrUnsafeLayer)
		}
		if err != nil {
			return -1, &os.PathError{Op: "openat2", Path: rel, Err: err}
		}
		return fd, nil
	}
}

// ensureDir opens directory rel under root as an O_PATH descriptor,
// creating it and its missing parents (0755, owned by the caller) first.
// A symlink on the way is followed only if it stays inside root.
func ensureDir(root int, rel string) (int, error) {
	fd, err := openBeneath(root, rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err == nil || rel == "." || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	parent, err := ensureDir(root, path.Dir(rel))
	if err != nil {
		return -1, err
	}
	err = unix.Mkdirat(parent, path.Base(rel), 0o755)
	unix.Close(parent)
	if err != nil && err != unix.EEXIST {
		return -1, &os.PathError{Op: "mkdirat", Path: rel, Err: err}
	}
	return openBeneath(root, rel, unix.O_PATH|unix.O_DIRECTORY, 0)
}

// lstatAt stats the single component base under parent without following it.
func lstatAt(parent int, base string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// clearAt removes whatever is named base under parent so a new entry can
// take its place: a file, a symlink (never followed) or an empty
// directory. Nothing there is fine.
func clearAt(parent int, base, rel string) error {
	st, err := lstatAt(parent, base)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "fstatat", Path: rel, Err: err}
	}
	flags := 0
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(parent, base, flags); err != nil {
		return &os.PathError{Op: "unlinkat", Path: rel, Err: err}
	}
	return nil
}

// cleanName turns a tar entry name into a path relative to the layer root:
// absolute names and ".." are cleaned against the root ("../../etc/x" is
// "etc/x"), the root itself is ".".
func cleanName(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("entry name %q holds a NUL byte: %w", name, ErrUnsafeLayer)
	}
	rel := strings.TrimPrefix(path.Clean("/"+name), "/")
	if rel == "" {
		return ".", nil
	}
	return rel, nil
}

// cleanLinkTarget is cleanName for a hardlink's target, which must name
// something inside the layer: a target climbing out with ".." is
// ErrUnsafeLayer rather than cleaned.
func cleanLinkTarget(name string) (string, error) {
	c := path.Clean(strings.TrimLeft(name, "/"))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("hardlink to %q points outside the layer: %w", name, ErrUnsafeLayer)
	}
	return cleanName(c)
}
