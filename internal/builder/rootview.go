package builder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// rootView is a read-only view of a layer stack on the host: the top
// directory itself for one layer, else a read-only overlay mounted on a
// temporary directory. Every path is resolved inside it with openat2
// RESOLVE_IN_ROOT: the image is untrusted, its symlinks point where it likes.
type rootView struct {
	fd    int
	mount string // "" when no overlay was mounted
}

// openView opens the merged tree of lower (':'-joined, topmost first).
func openView(tmpDir, lower string) (*rootView, error) {
	v := &rootView{fd: -1}
	dir := lower
	if strings.Contains(lower, ":") {
		mp, err := os.MkdirTemp(tmpDir, ".view-")
		if err != nil {
			return nil, err
		}
		if err := unix.Mount("overlay", mp, "overlay", unix.MS_RDONLY|unix.MS_NODEV|unix.MS_NOSUID, "lowerdir="+lower); err != nil {
			os.Remove(mp)
			return nil, fmt.Errorf("mount a view of the template's layers: %w", err)
		}
		v.mount, dir = mp, mp
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		v.close()
		return nil, err
	}
	v.fd = fd
	return v, nil
}

func (v *rootView) close() {
	if v.fd >= 0 {
		unix.Close(v.fd)
		v.fd = -1
	}
	if v.mount != "" {
		_ = unix.Unmount(v.mount, unix.MNT_DETACH)
		_ = os.Remove(v.mount)
		v.mount = ""
	}
}

func (v *rootView) open(p string, flags int) (*os.File, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(v.fd, strings.TrimPrefix(p, "/"), &how)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// readFile reads p (at most limit bytes); a missing file is nil, nil.
func (v *rootView) readFile(p string, limit int64) ([]byte, error) {
	f, err := v.open(p, unix.O_RDONLY|unix.O_NONBLOCK)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	return b, err
}

// stat returns p's metadata (following links inside the view); ok false if
// it does not exist.
func (v *rootView) stat(p string) (unix.Stat_t, bool) {
	var st unix.Stat_t
	f, err := v.open(p, unix.O_PATH)
	if err != nil {
		return st, false
	}
	defer f.Close()
	return st, unix.Fstat(int(f.Fd()), &st) == nil
}

// isExecutable reports whether p is a regular file with an x bit.
func (v *rootView) isExecutable(p string) bool {
	st, ok := v.stat(p)
	return ok && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0
}

// lstat is stat of p itself (a final symlink is not followed).
func (v *rootView) lstat(p string) (unix.Stat_t, bool) {
	var st unix.Stat_t
	f, err := v.open(p, unix.O_PATH|unix.O_NOFOLLOW)
	if err != nil {
		return st, false
	}
	defer f.Close()
	return st, unix.Fstat(int(f.Fd()), &st) == nil
}

// names returns the entries of directory p (at most 256; none if p is not
// a directory).
func (v *rootView) names(p string) []string {
	f, err := v.open(p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(256)
	return names
}
