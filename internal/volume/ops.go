package volume

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// maxListed bounds one directory listing.
const maxListed = 10000

// List describes the entries of directory p, depth levels deep (1: its
// children). Symlinked directories are listed as symlinks, not entered.
func (r *Root) List(p string, depth int) ([]Entry, error) {
	if depth < 1 || depth > 16 {
		return nil, fmt.Errorf("%w: depth must be 1-16", ErrInvalid)
	}
	fd, err := r.open(p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	err = listAt(fd, p, depth, &out)
	return out, err
}

// listAt appends the entries of the open directory fd (named p) to out and
// closes fd.
func listAt(fd int, p string, depth int, out *[]Entry) error {
	dir := os.NewFile(uintptr(fd), p)
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return pathErr(p, err)
	}
	for _, n := range names {
		if len(*out) >= maxListed {
			return fmt.Errorf("%w: more than %d entries", ErrInvalid, maxListed)
		}
		e, err := statAt(fd, n, path.Join(p, n))
		if err != nil {
			continue // removed meanwhile
		}
		*out = append(*out, e)
		if e.Type != "directory" || depth == 1 {
			continue
		}
		sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if err := listAt(sub, e.Path, depth-1, out); err != nil {
			return err
		}
	}
	return nil
}

// Mkdir creates directory p; with parents, missing parents too and an
// existing directory is no error.
func (r *Root) Mkdir(p string, parents bool, m Meta) (Entry, error) {
	if p == "/" {
		if parents {
			return r.Stat(p)
		}
		return Entry{}, fmt.Errorf("path /: %w", ErrExists)
	}
	if parents {
		if err := r.mkdirAll(path.Dir(p), Meta{UID: m.UID, GID: m.GID}); err != nil {
			return Entry{}, err
		}
	}
	dfd, base, err := r.parent(p)
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(dfd)
	err = r.mkdirAt(dfd, base, m)
	if err == nil || parents && isDirErr(dfd, base, err) {
		return statAt(dfd, base, p)
	}
	return Entry{}, pathErr(p, err)
}

func isDirErr(dfd int, base string, err error) bool {
	var st unix.Stat_t
	return err == unix.EEXIST && unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// mkdirAt makes base in dfd owned and moded as m says.
func (r *Root) mkdirAt(dfd int, base string, m Meta) error {
	if err := unix.Mkdirat(dfd, base, 0o700); err != nil {
		return err
	}
	uid, gid := m.ids()
	if err := unix.Fchownat(dfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	return unix.Fchmodat(dfd, base, m.mode(0o755), 0) // just made a directory: no symlink to follow
}

// mkdirAll makes every missing directory of p, each resolved in the root.
func (r *Root) mkdirAll(p string, m Meta) error {
	cur := "/"
	for _, c := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if c == "" {
			continue
		}
		cur = path.Join(cur, c)
		dfd, base, err := r.parent(cur)
		if err != nil {
			return err
		}
		err = r.mkdirAt(dfd, base, m)
		unix.Close(dfd)
		if err != nil && err != unix.EEXIST {
			return pathErr(cur, err)
		}
	}
	return nil
}

// Open opens regular file p for reading (symlinks followed inside the root).
func (r *Root) Open(p string) (*os.File, int64, error) {
	fd, err := r.open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY) // NONBLOCK: a FIFO never hangs the open
	if err != nil {
		return nil, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, pathErr(p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, 0, fmt.Errorf("%w: %s is not a regular file", ErrInvalid, p)
	}
	return os.NewFile(uintptr(fd), p), st.Size, nil
}

// Write writes body to file p through a temporary file renamed over it
// (a reader never sees half a file; a symlink at p is replaced, never
// followed). Missing parent directories are made.
func (r *Root) Write(p string, body io.Reader, m Meta) (Entry, error) {
	if p == "/" {
		return Entry{}, fmt.Errorf("%w: / is a directory", ErrInvalid)
	}
	if err := r.mkdirAll(path.Dir(p), Meta{}); err != nil {
		return Entry{}, err
	}
	dfd, base, err := r.parent(p)
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(dfd)
	tmp := ".sbx-vol-" + randHex()
	if err := writeTemp(dfd, tmp, body, m); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return Entry{}, pathErr(p, err)
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return Entry{}, pathErr(p, err)
	}
	return statAt(dfd, base, p)
}

func writeTemp(dfd int, name string, body io.Reader, m Meta) error {
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	uid, gid := m.ids()
	if err := f.Chown(uid, gid); err != nil {
		return err
	}
	if err := f.Chmod(os.FileMode(m.mode(0o644) & 0o777)); err != nil {
		return err
	}
	if m.mode(0o644)&0o1000 != 0 {
		if err := unix.Fchmod(fd, m.mode(0o644)); err != nil {
			return err
		}
	}
	if _, err := io.Copy(f, body); err != nil {
		return unwrapErrno(err)
	}
	return f.Sync()
}

// unwrapErrno digs the errno out of an *os.PathError so pathErr maps it.
func unwrapErrno(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func randHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SetMeta changes p's owner and mode; p itself is acted on, never a
// symlink's target (a symlink has no mode of its own).
func (r *Root) SetMeta(p string, m Meta) (Entry, error) {
	dfd, base, err := r.parent(p)
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(dfd)
	if base == "" {
		base = "."
	}
	if m.UID != nil || m.GID != nil {
		uid, gid := -1, -1
		if m.UID != nil {
			uid = int(*m.UID)
		}
		if m.GID != nil {
			gid = int(*m.GID)
		}
		if err := unix.Fchownat(dfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return Entry{}, pathErr(p, err)
		}
	}
	if m.Mode != nil {
		err := chmodNoFollow(dfd, base, *m.Mode)
		if err == unix.ELOOP {
			return Entry{}, fmt.Errorf("%w: %s is a symlink, which has no mode", ErrInvalid, p)
		}
		if err != nil {
			return Entry{}, pathErr(p, err)
		}
	}
	return statAt(dfd, strings.TrimPrefix(base, "."), p)
}

func chmodNoFollow(dfd int, base string, mode uint32) error {
	fd, err := unix.Openat(dfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.ELOOP
	}
	return unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
}
