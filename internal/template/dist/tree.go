package dist

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// WriteTree writes the layer tree under root (overlayfs format, as the
// layer store keeps it) to w as an uncompressed OCI layer tar, the inverse
// of oci.Unpack: a 0:0 character device NAME becomes the whiteout
// ".wh.NAME", a directory with trusted.overlay.opaque=y gets a
// ".wh..wh..opq" entry, hardlinks within the tree stay hardlinks, owners,
// modes, times and the xattrs user.* and security.capability are kept.
// Other device nodes and sockets are skipped (Unpack would skip them).
// The order is lexical, so the same tree gives the same bytes. Nothing is
// followed: symlinks are written as symlinks and files opened O_NOFOLLOW.
func WriteTree(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		return writeEntry(tw, p, filepath.ToSlash(rel), links)
	})
	if err != nil {
		return fmt.Errorf("tar %s: %w", root, err)
	}
	return tw.Close()
}

// writeEntry writes the entry of host path p, named rel in the layer.
func writeEntry(tw *tar.Writer, p, rel string, links map[[2]uint64]string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	m := fi.Mode()
	if m&fs.ModeCharDevice != 0 && st.Rdev == 0 { // overlay whiteout
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Join(path.Dir(rel), ".wh."+path.Base(rel)),
			Mode: 0o600, ModTime: fi.ModTime(), Format: tar.FormatPAX})
	}
	if m&(fs.ModeDevice|fs.ModeSocket) != 0 {
		return nil
	}
	h, err := header(p, rel, fi, st, links)
	if err != nil || h == nil {
		return err
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag == tar.TypeReg && h.Size > 0 {
		if err := copyFile(tw, p, h.Size); err != nil {
			return err
		}
	}
	if m.IsDir() && opaque(p) {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel + "/.wh..wh..opq",
			Mode: 0o600, ModTime: fi.ModTime(), Format: tar.FormatPAX})
	}
	return nil
}

// header is the tar header of a file, directory, symlink, FIFO or a
// hardlink to a regular file already written.
func header(p, rel string, fi fs.FileInfo, st *syscall.Stat_t, links map[[2]uint64]string) (*tar.Header, error) {
	target := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := os.Readlink(p)
		if err != nil {
			return nil, err
		}
		target = t
	}
	h, err := tar.FileInfoHeader(fi, target)
	if err != nil {
		return nil, err
	}
	h.Name, h.Uid, h.Gid, h.Uname, h.Gname = rel, int(st.Uid), int(st.Gid), "", ""
	h.Format, h.AccessTime, h.ChangeTime = tar.FormatPAX, time.Time{}, time.Time{}
	if fi.IsDir() {
		h.Name += "/"
	}
	if fi.Mode().IsRegular() && st.Nlink > 1 {
		k := [2]uint64{st.Dev, st.Ino}
		if first, ok := links[k]; ok {
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
			return h, nil
		}
		links[k] = rel
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		h.PAXRecords = xattrs(p)
	}
	return h, nil
}

// copyFile writes exactly size bytes of regular file p.
func copyFile(w io.Writer, p string, size int64) error {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyN(w, f, size)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: shrank to %d bytes while being written", p, n)
	}
	return err
}

// xattrs are the PAX records of the xattrs a layer keeps (nil if none).
func xattrs(p string) map[string]string {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n == 0 {
		return nil
	}
	var out map[string]string
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if !strings.HasPrefix(name, "user.") && name != "security.capability" {
			continue
		}
		v := make([]byte, 64<<10)
		vn, err := unix.Lgetxattr(p, name, v)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out["SCHILY.xattr."+name] = string(v[:vn])
	}
	return out
}

// opaque reports whether directory p is an overlay opaque directory.
func opaque(p string) bool {
	v := make([]byte, 8)
	n, err := unix.Lgetxattr(p, "trusted.overlay.opaque", v)
	return err == nil && string(v[:n]) == "y"
}
