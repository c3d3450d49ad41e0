package volume

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is an open volume directory. Every path given to it is resolved
// inside it with openat2 RESOLVE_IN_ROOT (".." and absolute symlinks stop
// at the volume's root), without magic links and without crossing a mount.
// The final component of a path that is changed (created, removed,
// re-owned) is never followed: it is acted on through its parent's fd.
type Root struct {
	fd int
}

// DefaultUID and DefaultGID own what the content API creates unless the
// request says otherwise: the sandboxes' `user`.
const DefaultUID, DefaultGID = 1000, 1000

// maxID bounds uid and gid: sandboxes map 65536 ids.
const maxID = 65535

const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// OpenRoot opens dir as a Root.
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open volume: %w", err)
	}
	return &Root{fd: fd}, nil
}

// Close releases the root's fd.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Clean turns a request path into the volume path it names ("/a/b").
func Clean(p string) (string, error) {
	if p == "" || len(p) > 4096 || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: path must be 1-4096 bytes without NUL", ErrInvalid)
	}
	return path.Clean("/" + p), nil
}

// open resolves p (clean, absolute) inside the root, following symlinks
// within it.
func (r *Root) open(p string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveFlags}
	rel := strings.TrimPrefix(p, "/")
	if rel == "" {
		rel = "."
	}
	for {
		fd, err := unix.Openat2(r.fd, rel, &how)
		if err == unix.EINTR || err == unix.EAGAIN { // EAGAIN: a rename raced the resolution
			continue
		}
		if err != nil {
			return -1, pathErr(p, err)
		}
		return fd, nil
	}
}

// parent resolves p's parent directory and returns its fd and p's last
// component ("" for the root itself).
func (r *Root) parent(p string) (int, string, error) {
	dir, base := path.Split(p)
	fd, err := r.open(dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return -1, "", err
	}
	return fd, base, nil
}

// pathErr maps a syscall error on p to the package's errors.
func pathErr(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("path %s: %w", p, ErrNotFound)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%w: a component of %s is not a directory", ErrNotFound, p)
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%w: path %s leaves the volume or loops", ErrInvalid, p)
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return fmt.Errorf("path %s: %w", p, ErrNoSpace)
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("path %s: %w", p, ErrExists)
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%w: %s is a directory", ErrInvalid, p)
	case errors.Is(err, unix.ENOTEMPTY):
		return fmt.Errorf("%w: %s changed while it was removed", ErrExists, p)
	case errors.Is(err, unix.ENAMETOOLONG):
		return fmt.Errorf("%w: %s: name too long", ErrInvalid, p)
	}
	return &os.PathError{Op: "volume", Path: p, Err: err}
}

// Meta is the ownership and mode a request sets (nil: unchanged/default).
type Meta struct {
	UID, GID *uint32
	Mode     *uint32
}

// Check validates m: ids a sandbox can map, permission bits and sticky
// only (no setuid or setgid files in a volume).
func (m Meta) Check() error {
	if m.UID != nil && *m.UID > maxID || m.GID != nil && *m.GID > maxID {
		return fmt.Errorf("%w: uid and gid must be 0-%d", ErrInvalid, maxID)
	}
	if m.Mode != nil && *m.Mode&^0o1777 != 0 {
		return fmt.Errorf("%w: mode %#o: only permission bits and sticky are allowed", ErrInvalid, *m.Mode)
	}
	return nil
}

func (m Meta) ids() (int, int) {
	uid, gid := DefaultUID, DefaultGID
	if m.UID != nil {
		uid = int(*m.UID)
	}
	if m.GID != nil {
		gid = int(*m.GID)
	}
	return uid, gid
}

func (m Meta) mode(def uint32) uint32 {
	if m.Mode != nil {
		return *m.Mode
	}
	return def
}
