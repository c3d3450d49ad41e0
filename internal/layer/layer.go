// Package layer gives each sandbox a writable root filesystem over an
// immutable template: a tmpfs sized to the sandbox's disk quota holds the
// overlay's upper and work dirs, and an overlay mount joins it with the
// template. Writes past the quota fail with ENOSPC inside the sandbox and
// never touch the host disk. Tmpfs pages are memory: the quota bounds how
// much host memory a sandbox's files can take.
//
// Layout under the store's directory: <dir>/<id>/layer (tmpfs: upper/, work/)
// and <dir>/<id>/rootfs (overlay). Everything is recoverable from the mount
// table after a daemon restart, so the store keeps no other state.
package layer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Store manages the layers under Dir. Safe for concurrent use on different ids.
type Store struct {
	Dir string
	// Inodes caps files per layer (tmpfs nr_inodes); 0 means 64k per GiB.
	Inodes uint64
}

// New creates the store directory.
func New(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("layer store: %w", err)
	}
	return &Store{Dir: dir}, nil
}

func (s *Store) paths(id string) (base, layer, rootfs string) {
	base = filepath.Join(s.Dir, id)
	return base, filepath.Join(base, "layer"), filepath.Join(base, "rootfs")
}

// Prepare mounts a writable layer of diskBytes over lower and returns the
// merged rootfs. The upper root is owned by ownerUID:ownerUID (the host uid of
// sandbox root). On error nothing is left mounted or on disk.
func (s *Store) Prepare(_ context.Context, id, lower string, diskBytes int64, ownerUID uint32) (rootfs string, err error) {
	if strings.ContainsAny(id, "/.") || id == "" {
		return "", fmt.Errorf("layer: bad id %q", id)
	}
	base, layer, rootfs := s.paths(id)
	defer func() {
		if err != nil {
			_ = s.Remove(id)
		}
	}()
	if err := os.MkdirAll(layer, 0o700); err != nil {
		return "", err
	}
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(base, 0o711); err != nil {
		return "", err
	}
	inodes := s.Inodes
	if inodes == 0 {
		inodes = max(uint64(diskBytes>>30)*65536, 16384)
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", diskBytes, inodes)
	if err := unix.Mount("tmpfs", layer, "tmpfs", unix.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("mount layer tmpfs: %w", err)
	}
	if err := s.mountOverlay(lower, layer, rootfs, ownerUID); err != nil {
		return "", err
	}
	return rootfs, nil
}

func (s *Store) mountOverlay(lower, layer, rootfs string, owner uint32) error {
	upper, work := filepath.Join(layer, "upper"), filepath.Join(layer, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		if err := os.Chown(d, int(owner), int(owner)); err != nil {
			return err
		}
	}
	if st, err := os.Stat(lower); err != nil || !st.IsDir() {
		return fmt.Errorf("template rootfs %s: not a directory (%v)", lower, err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,index=off,xino=off", lower, upper, work)
	if err := unix.Mount("overlay", rootfs, "overlay", unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	return nil
}

// Rootfs returns the mounted rootfs of id.
func (s *Store) Rootfs(id string) (string, bool) {
	_, _, rootfs := s.paths(id)
	return rootfs, mounted(rootfs)
}

// Remove unmounts and deletes the layer of id; a missing layer is not an error.
func (s *Store) Remove(id string) error {
	base, layer, rootfs := s.paths(id)
	var errs []error
	for _, m := range []string{rootfs, layer} {
		errs = append(errs, unmount(m))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove layer %s: %w", id, err)
	}
	if err := os.RemoveAll(base); err != nil {
		return fmt.Errorf("remove layer %s: %w", id, err)
	}
	return nil
}

// List returns the ids that have a layer directory.
func (s *Store) List() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// unmount detaches a mount point if mounted (lazily if busy).
func unmount(p string) error {
	if !mounted(p) {
		return nil
	}
	err := unix.Unmount(p, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(p, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", p, err)
	}
	return nil
}

// mounted reports whether p is a mount point (per /proc/self/mountinfo).
func mounted(p string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && unescape(f[4]) == p {
			return true
		}
	}
	return false
}

func unescape(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}
