package volume

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// A tree is removed holding at most two descriptors, however deep: one
// directory open at a time, climbing back through "..", checked against
// the device and inode it came down from. Before, the delete held a
// descriptor per level, and a sandbox can nest directories as deep as its
// volume's quota lets it: a tree 1,000 deep failed under a limit of 256
// descriptors, and a few such deletes at once could take the daemon to
// its limit, for every tenant.

// errMoved: a directory of the tree was moved while it was being removed.
var errMoved = fmt.Errorf("%w: a directory was moved while being removed", ErrInvalid)

// removeBatch is how many names are read from a directory at a time.
const removeBatch = 256

// Remove removes p, a directory with everything under it.
func (r *Root) Remove(p string) error {
	if p == "/" {
		return fmt.Errorf("%w: the volume's root cannot be removed", ErrInvalid)
	}
	dfd, base, err := r.parent(p)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return pathErr(p, removeAt(dfd, base))
}

// removeAt removes base in dfd without following any symlink.
func removeAt(dfd int, base string) error {
	err := unix.Unlinkat(dfd, base, 0)
	if err != unix.EISDIR && err != unix.EPERM {
		return err
	}
	if err := emptyTree(dfd, base); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR)
}

// dirID is a directory's identity.
type dirID struct{ dev, ino uint64 }

// emptyTree removes everything under directory base of dfd, depth first,
// with one directory of it open at a time; up holds the identities of the
// directories from base down to the one open.
func emptyTree(dfd int, base string) error {
	cur, id, err := openDir(dfd, base)
	if err != nil {
		return err
	}
	up := []dirID{id}
	for {
		sub, err := emptyDir(cur)
		switch {
		case err != nil:
			cur.Close()
			return err
		case sub != nil: // go down
			cur.Close()
			cur, up = sub.f, append(up, sub.id)
		case len(up) == 1: // base is empty
			return cur.Close()
		default: // back up: the parent removes the now empty directory
			parent, err := climb(cur, up[len(up)-2])
			cur.Close()
			if err != nil {
				return err
			}
			cur, up = parent, up[:len(up)-1]
		}
	}
}

// openedDir is a directory opened to be emptied.
type openedDir struct {
	f  *os.File
	id dirID
}

// emptyDir unlinks what dir holds, empty directories included, until it
// meets a directory that is not empty: it returns that one open (the
// caller goes down into it), or nil once dir is empty.
func emptyDir(dir *os.File) (*openedDir, error) {
	fd := int(dir.Fd())
	for {
		names, err := dir.Readdirnames(removeBatch)
		for _, n := range names {
			sub, err := unlinkOrOpen(fd, n)
			if err != nil || sub != nil {
				return sub, err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// unlinkOrOpen removes entry n of fd if it is a file or an empty
// directory; a directory that is not empty is returned open.
func unlinkOrOpen(fd int, n string) (*openedDir, error) {
	err := unix.Unlinkat(fd, n, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		err = unix.Unlinkat(fd, n, unix.AT_REMOVEDIR)
		if err == unix.ENOTEMPTY || err == unix.EEXIST {
			f, id, err := openDir(fd, n)
			if err != nil {
				return nil, err
			}
			return &openedDir{f: f, id: id}, nil
		}
	}
	if err == nil || err == unix.ENOENT {
		return nil, nil
	}
	return nil, err
}

// openDir opens directory n of fd, following no symlink, and tells its
// identity.
func openDir(fd int, n string) (*os.File, dirID, error) {
	sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, dirID{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(sub, &st); err != nil {
		unix.Close(sub)
		return nil, dirID{}, err
	}
	return os.NewFile(uintptr(sub), n), dirID{st.Dev, st.Ino}, nil
}

// climb opens dir's parent, which must be want (the directory it came
// down from): a tree moved meanwhile is errMoved, never a climb out of it.
func climb(dir *os.File, want dirID) (*os.File, error) {
	parent, id, err := openDir(int(dir.Fd()), "..")
	if err != nil {
		return nil, err
	}
	if id != want {
		parent.Close()
		return nil, errMoved
	}
	return parent, nil
}
