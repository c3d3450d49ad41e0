// Package layer gives each sandbox a writable root filesystem over an
// immutable template: a tmpfs sized to the sandbox's disk quota holds the
// overlay's upper and work directories, and an overlay mount joins it with
// the template (the lower layer, never written).
//
// A write past the quota fails with ENOSPC inside the sandbox and never
// touches the host disk. Tmpfs pages are memory (swappable): a sandbox's
// written files count against host memory, and the disk quota (DiskBytes)
// is what bounds them. Size host memory for the sum of the quotas, not only
// the sandboxes' memory limits.
//
// The kernel charges a tmpfs page to the memory cgroup of the process that
// writes it. Under runsc that is the Sentry or its gofer, whose cgroup the
// runtime lets hold the quota beyond the memory limit
// (runtime.Limits.DiskBytes, internal/runtime/oci diskmem.go): files fill
// the quota, not the memory limit. Under crun and runc the sandbox's own
// processes write, in the one cgroup that also bounds their memory: there
// a sandbox's files count against its memory limit, and files past that
// limit get the kernel to OOM-kill every process in the sandbox, its agent
// included, before the quota is reached (docs/SECURITY.md, Known gaps).
//
// Layout of one layer directory:
//
//	<dir>/layer   tmpfs (size=DiskBytes, nr_inodes=Inodes), mode 0700: upper/, work/
//	<dir>/rootfs  overlay (lowerdir=template, upperdir, workdir): the sandbox's /
//
// Everything is recoverable from the mount table (Open, Mounted) after a
// daemon restart, and Cleanup removes whatever a crash left behind.
package layer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// DefaultDiskBytes is the quota when Options.DiskBytes is 0.
const DefaultDiskBytes = 1 << 30

// ErrNotMounted is returned (wrapped) by Open for a directory that holds no
// mounted layer.
var ErrNotMounted = errors.New("layer not mounted")

// Options size and own a layer.
type Options struct {
	// DiskBytes is the tmpfs size (with Image: the room for file data): the
	// most a sandbox can write. 0 means
	// DefaultDiskBytes.
	DiskBytes int64
	// Inodes caps the files a sandbox can create (tmpfs nr_inodes; with
	// Image, the file system's inode count). 0 means
	// 64Ki per GiB of DiskBytes, at least 16Ki.
	Inodes uint64
	// OwnerUID and OwnerGID own the root of the upper layer, and so the
	// sandbox's "/": the host id of sandbox root (0 for gVisor, the
	// user-namespace base for crun and runc).
	OwnerUID, OwnerGID uint32
	// Seed, if set, is a directory copied into the upper layer before the
	// overlay is mounted (a layer saved by SaveUpper).
	Seed string
	// Image, if set, backs the layer by the host's disk instead of a tmpfs:
	// an ext4 file system made in this file (which must not exist; its
	// directory must) of DiskBytes for files and exactly Inodes inodes,
	// loop-mounted where the tmpfs would be (disk.go). Remove the file with
	// RemoveImage after the layer's Cleanup.
	Image string

	ctx context.Context // bounds the seed copy; nil means Background
}

func (o Options) withDefaults() Options {
	if o.DiskBytes <= 0 {
		o.DiskBytes = DefaultDiskBytes
	}
	if o.Inodes == 0 {
		o.Inodes = max(uint64(o.DiskBytes>>30)*65536, 16384)
	}
	return o
}

// Layer is a mounted writable layer.
type Layer struct {
	Dir    string // the layer's directory
	Rootfs string // the merged tree: the sandbox's root filesystem
	Upper  string // where the sandbox's writes land (on the tmpfs or image)
}

func paths(dir string) *Layer {
	tmpfs := filepath.Join(dir, "layer")
	return &Layer{Dir: dir, Rootfs: filepath.Join(dir, "rootfs"), Upper: filepath.Join(tmpfs, "upper")}
}

func (l *Layer) tmpfs() string { return filepath.Dir(l.Upper) }
func (l *Layer) work() string  { return filepath.Join(l.tmpfs(), "work") }

// Open returns the layer mounted at dir (after a daemon restart, say). The
// error wraps ErrNotMounted when the overlay is not mounted.
func Open(dir string) (*Layer, error) {
	dir, err := realPath(dir)
	if err != nil {
		return nil, fmt.Errorf("open layer: %w", err)
	}
	if !Mounted(dir) {
		return nil, fmt.Errorf("open layer %s: %w", dir, ErrNotMounted)
	}
	return paths(dir), nil
}

// Mounted reports whether dir holds a mounted layer (its overlay).
func Mounted(dir string) bool {
	dir, err := realPath(dir)
	if err != nil {
		return false
	}
	return isMountPoint(paths(dir).Rootfs)
}

// Remove unmounts the overlay, then the tmpfs, and deletes the directory.
// It is idempotent: removing a removed layer returns nil.
func (l *Layer) Remove() error { return removeLayer(l.Dir) }

// realPath returns p absolute with its parent's symlinks resolved, so that it
// matches the mount table. p itself need not exist.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, filepath.Base(abs)), nil
}

// checkOptionPath refuses paths that the overlay option parser would split.
func checkOptionPath(p string) error {
	if strings.ContainsAny(p, ",:\\\n") {
		return fmt.Errorf("path %q has a character overlayfs cannot take (,:\\)", p)
	}
	return nil
}
