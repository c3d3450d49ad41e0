package oci

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"

	"golang.org/x/sys/unix"
)

// Unpack writes the (uncompressed) tar stream r into dst, an existing empty
// directory, in overlayfs format: an OCI whiteout ".wh.NAME" becomes a 0:0
// character device NAME and ".wh..wh..opq" sets trusted.overlay.opaque=y on
// its directory. Owners, modes (setuid, setgid and sticky included), times,
// symlinks, hardlinks to entries of this layer, FIFOs and the PAX xattrs
// "user.*" and "security.capability" are kept; other device nodes are
// skipped with a line on log (which may be nil).
//
// Every entry is resolved inside dst with openat2(2) and RESOLVE_BENEATH:
// names are cleaned against the layer root ("../x" and "/x" are "x"); a
// walk through a symlink that leaves dst, or a hardlink to something
// outside dst or not (yet) in the layer, is ErrUnsafeLayer. More than limit
// bytes read from r or written as file content is ErrTooLarge. r is read to
// its end, so a verifying reader sees all of it. On error dst holds a
// partial tree; the caller removes it.
func Unpack(ctx context.Context, r io.Reader, dst string, limit int64, log io.Writer) error {
	root, err := unix.Open(dst, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("unpack into %s: %w", dst, err)
	}
	defer unix.Close(root)
	m := &meter{ctx: ctx, r: r, limit: limit}
	u := &unpacker{root: root, m: m, log: log}
	if err := u.run(tar.NewReader(m)); err != nil {
		return fmt.Errorf("unpack into %s: %w", dst, err)
	}
	return nil
}

// unpacker is the state of one Unpack.
type unpacker struct {
	root int // O_PATH descriptor of dst
	m    *meter
	log  io.Writer
	dirs []dirTimes // directory times, set last (entries below change them)
}

func (u *unpacker) run(tr *tar.Reader) error {
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read layer: %w", err)
		}
		if err := u.entry(hdr, tr); err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, u.m); err != nil {
		return fmt.Errorf("read layer: %w", err)
	}
	return u.setDirTimes()
}

// entry writes one tar entry.
func (u *unpacker) entry(hdr *tar.Header, body io.Reader) error {
	rel, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}
	base := path.Base(rel)
	if isWhiteout(base) {
		return u.whiteout(rel, base)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return u.dir(rel, hdr)
	case tar.TypeReg, tar.TypeGNUSparse: // the reader reports the old TypeRegA as TypeReg
		return u.file(rel, hdr, body)
	case tar.TypeSymlink:
		return u.symlink(rel, hdr)
	case tar.TypeLink:
		return u.hardlink(rel, hdr)
	case tar.TypeFifo:
		return u.fifo(rel, hdr)
	case tar.TypeChar, tar.TypeBlock:
		u.logf("skipped device node %s (%d:%d)", rel, hdr.Devmajor, hdr.Devminor)
	default:
		u.logf("skipped %s of unsupported type %q", rel, hdr.Typeflag)
	}
	return nil
}

// parent opens (creating if needed) the directory holding rel, refusing the
// layer root itself as an entry of a non-directory type.
func (u *unpacker) parent(rel string) (int, string, error) {
	if rel == "." {
		return -1, "", fmt.Errorf("entry for the layer root is not a directory: %w", ErrUnsafeLayer)
	}
	fd, err := ensureDir(u.root, path.Dir(rel))
	return fd, path.Base(rel), err
}

func (u *unpacker) logf(format string, args ...any) {
	if u.log != nil {
		fmt.Fprintf(u.log, format+"\n", args...)
	}
}

// meter bounds and cancels the layer stream: more than limit bytes is
// ErrTooLarge, a done ctx ends the read. It also counts file content
// written (see write), which sparse entries can make larger than the
// stream.
type meter struct {
	ctx     context.Context
	r       io.Reader
	limit   int64
	read    int64
	written int64
}

func (m *meter) Read(p []byte) (int, error) {
	if err := m.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := m.r.Read(p)
	m.read += int64(n)
	if m.read > m.limit {
		return n, fmt.Errorf("layer is larger than %d bytes: %w", m.limit, ErrTooLarge)
	}
	return n, err
}

// reserve accounts n more bytes of file content.
func (m *meter) reserve(n int64) error {
	if n < 0 || m.written+n > m.limit || m.written+n < m.written {
		return fmt.Errorf("layer content is larger than %d bytes: %w", m.limit, ErrTooLarge)
	}
	m.written += n
	return nil
}

// errIs reports whether err is one of the given errnos.
func errIs(err error, errnos ...unix.Errno) bool {
	for _, e := range errnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
