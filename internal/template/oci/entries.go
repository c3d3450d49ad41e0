package oci

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// The creators of each entry type. Each opens the parent directory beneath
// the root, clears whatever the name held (never following it), creates the
// entry, reopens it by the single name with O_NOFOLLOW and sets its
// metadata through that descriptor.

// dir creates (or keeps, if one is there) the directory rel; its times are
// set at the end of the layer.
func (u *unpacker) dir(rel string, hdr *tar.Header) error {
	fd, err := u.makeDir(rel)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := u.setMeta(fd, rel, hdr, true); err != nil {
		return err
	}
	u.dirs = append(u.dirs, dirTimes{rel: rel, ts: timespecs(hdr)})
	return nil
}

// makeDir returns a read descriptor of directory rel, creating it unless a
// directory already holds the name.
func (u *unpacker) makeDir(rel string) (int, error) {
	if rel == "." {
		return openBeneath(u.root, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	}
	parent, base, err := u.parent(rel)
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	if st, err := lstatAt(parent, base); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := clearAt(parent, base, rel); err != nil {
			return -1, err
		}
		if err := unix.Mkdirat(parent, base, 0o700); err != nil {
			return -1, &os.PathError{Op: "mkdirat", Path: rel, Err: err}
		}
	}
	return openBeneath(parent, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
}

// file writes the regular file rel with hdr.Size bytes of body.
func (u *unpacker) file(rel string, hdr *tar.Header, body io.Reader) error {
	if err := u.m.reserve(hdr.Size); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	parent, base, err := u.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := clearAt(parent, base, rel); err != nil {
		return err
	}
	fd, err := openBeneath(parent, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	if _, err := io.CopyN(f, body, hdr.Size); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := u.setMeta(fd, rel, hdr, true); err != nil {
		return err
	}
	return setTimes(fd, rel, timespecs(hdr), 0)
}

// symlink creates the symlink rel with hdr.Linkname as its text, whatever
// it points to: it is never followed while unpacking.
func (u *unpacker) symlink(rel string, hdr *tar.Header) error {
	parent, base, err := u.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := clearAt(parent, base, rel); err != nil {
		return err
	}
	if err := unix.Symlinkat(hdr.Linkname, parent, base); err != nil {
		return &os.PathError{Op: "symlinkat", Path: rel, Err: err}
	}
	fd, err := openBeneath(parent, base, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := chown(fd, rel, hdr); err != nil {
		return err
	}
	return setTimes(fd, rel, timespecs(hdr), unix.AT_SYMLINK_NOFOLLOW)
}

// hardlink links rel to an entry already written in this layer.
func (u *unpacker) hardlink(rel string, hdr *tar.Header) error {
	target, err := cleanLinkTarget(hdr.Linkname)
	if err != nil || target == rel {
		return err
	}
	tfd, err := openBeneath(u.root, target, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if errIs(err, unix.ENOENT, unix.ENOTDIR) {
		return fmt.Errorf("hardlink %s to %q: not in this layer: %w", rel, hdr.Linkname, ErrUnsafeLayer)
	}
	if err != nil {
		return fmt.Errorf("hardlink %s: %w", rel, err)
	}
	defer unix.Close(tfd)
	parent, base, err := u.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := clearAt(parent, base, rel); err != nil {
		return err
	}
	if err := unix.Linkat(tfd, "", parent, base, unix.AT_EMPTY_PATH); err != nil {
		return &os.PathError{Op: "linkat", Path: rel, Err: err}
	}
	return nil
}

// fifo creates the named pipe rel.
func (u *unpacker) fifo(rel string, hdr *tar.Header) error {
	parent, base, err := u.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := clearAt(parent, base, rel); err != nil {
		return err
	}
	if err := unix.Mknodat(parent, base, unix.S_IFIFO|0o600, 0); err != nil {
		return &os.PathError{Op: "mknodat", Path: rel, Err: err}
	}
	fd, err := openBeneath(parent, base, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := u.setMeta(fd, rel, hdr, false); err != nil {
		return err
	}
	return setTimes(fd, rel, timespecs(hdr), 0)
}

// isWhiteout reports whether base is an OCI whiteout name.
func isWhiteout(base string) bool { return strings.HasPrefix(base, ".wh.") }

// whiteout turns the OCI whiteout rel into its overlayfs form.
func (u *unpacker) whiteout(rel, base string) error {
	dir := path.Dir(rel)
	if base == ".wh..wh..opq" {
		return u.opaque(dir)
	}
	if strings.HasPrefix(base, ".wh..wh.") {
		u.logf("skipped whiteout metadata entry %s", rel)
		return nil
	}
	name := strings.TrimPrefix(base, ".wh.")
	if name == "." || name == ".." {
		return fmt.Errorf("whiteout %q names no entry: %w", rel, ErrUnsafeLayer)
	}
	target := path.Join(dir, name)
	parent, tbase, err := u.parent(target)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := clearAt(parent, tbase, target); err != nil {
		return err
	}
	if err := unix.Mknodat(parent, tbase, unix.S_IFCHR, int(unix.Mkdev(0, 0))); err != nil {
		return &os.PathError{Op: "mknodat", Path: target, Err: err}
	}
	return nil
}

// opaque marks directory dir opaque: overlayfs hides the lower layers'
// entries below it.
func (u *unpacker) opaque(dir string) error {
	pfd, err := ensureDir(u.root, dir)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	fd, err := openBeneath(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fsetxattr(fd, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		return &os.PathError{Op: "setxattr trusted.overlay.opaque", Path: dir, Err: err}
	}
	return nil
}
