package layer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Store keeps one layer per sandbox id under Dir (Dir/<id>). It holds no
// state besides the directories, the images and the mount table, so a new
// Store after a restart sees every layer. Safe for concurrent use on
// different ids.
type Store struct {
	Dir string
	// Inodes caps files per layer; 0 means Options' default.
	Inodes uint64
	// Images, if set, is a directory on the host's disk where the layers of
	// user-namespaced sandboxes (ownerUID not 0: crun, runc) get an ext4
	// image each (Images/<id>.img) instead of a tmpfs. There the sandbox's
	// own processes write the layer, in the memory cgroup that bounds them,
	// which a tmpfs page is charged to and cannot leave; a file on a disk
	// is page cache, written back and dropped under that limit, so files
	// fill the disk quota, not the memory limit. Under gVisor (ownerUID 0)
	// the Sentry writes, whose cgroup is sized for the quota
	// (internal/runtime/oci diskmem.go): those layers stay tmpfs.
	Images string
	// ReapImagesOnly, with Images set, makes no new images (every new
	// layer is a tmpfs) while those left by an earlier run with images are
	// still listed and removed with their layers.
	ReapImagesOnly bool
}

// New creates the store directory (mode 0711: sandbox root on user-namespaced
// runtimes is an unprivileged host uid and must traverse it).
func New(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("layer store: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("layer store: %w", err)
	}
	return &Store{Dir: real}, nil
}

func (s *Store) dir(id string) (string, error) {
	if id == "" || strings.ContainsAny(id, "/.\\,:") || len(id) > 128 {
		return "", fmt.Errorf("layer: bad id %q", id)
	}
	return filepath.Join(s.Dir, id), nil
}

// Prepare mounts a writable layer of diskBytes over lower for id and returns
// the merged rootfs, whose root is owned by ownerUID:ownerUID. On error
// nothing is left mounted or on disk.
func (s *Store) Prepare(ctx context.Context, id, lower string, diskBytes int64, ownerUID uint32) (string, error) {
	return s.PrepareFrom(ctx, id, lower, diskBytes, ownerUID, "")
}

// image is the image file of id's layer if it is disk-backed ("" if not).
func (s *Store) image(id string, ownerUID uint32) string {
	if ownerUID == 0 || s.ReapImagesOnly {
		return ""
	}
	return s.imagePath(id)
}

// imagePath is where id's image is if it has one ("" without Images).
func (s *Store) imagePath(id string) string {
	if s.Images == "" {
		return ""
	}
	return filepath.Join(s.Images, id+imageExt)
}

// UseImages turns disk-backed layers on (Images = dir, created 0700), if
// the host can make them (DiskSupported) and dir is on a disk, not in
// memory.
func (s *Store) UseImages(dir string) error {
	if err := DiskSupported(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("layer images: %w", err)
	}
	if mem, err := onMemory(dir); err != nil {
		return fmt.Errorf("layer images: %w", err)
	} else if mem {
		return fmt.Errorf("layer images: %s is in memory (tmpfs), not on a disk", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("layer images: %w", err)
	}
	s.Images = real
	return nil
}

const imageExt = ".img"

// Rootfs returns the merged rootfs of id and whether it is mounted.
func (s *Store) Rootfs(id string) (string, bool) {
	dir, err := s.dir(id)
	if err != nil {
		return "", false
	}
	return paths(dir).Rootfs, Mounted(dir)
}

// Remove unmounts and deletes the layer of id and its image, whose file
// system is shut down first (nothing of it is written back: it is
// deleted); a missing layer is not an error. The image goes after the
// unmount and before the directory, so a crash in between leaves the
// directory for List to find.
func (s *Store) Remove(id string) error {
	dir, err := s.dir(id)
	if err != nil {
		return err
	}
	if s.Images == "" {
		return removeLayer(dir)
	}
	shutdown := func(real string) { shutdownDisk(paths(real).tmpfs()) }
	return removeLayerWith(dir, shutdown, func() error { return RemoveImage(s.imagePath(id)) })
}

// List returns the ids that have a layer directory, mounted or not, or an
// image (a directory without mounts, or an image without a directory —
// after a reboot, say —, is a crash's leftover: Remove reaps it).
func (s *Store) List() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("layer store: %w", err)
	}
	seen := map[string]bool{}
	var ids []string
	for _, e := range ents {
		if e.IsDir() {
			seen[e.Name()] = true
			ids = append(ids, e.Name())
		}
	}
	imgs, err := s.listImages()
	for _, id := range imgs {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	return ids, err
}

// listImages returns the ids that have an image.
func (s *Store) listImages() ([]string, error) {
	if s.Images == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(s.Images)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("layer images: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), imageExt); ok && e.Type().IsRegular() {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// clearImage makes room for a new image of id: an image left without its
// layer directory (by a crash between the two) is not a live layer's.
func (s *Store) clearImage(id string, ownerUID uint32) error {
	img := s.image(id, ownerUID)
	if img == "" {
		return nil
	}
	if dir, _ := s.dir(id); dir != "" {
		if _, err := os.Lstat(dir); err == nil {
			return fmt.Errorf("prepare layer %s: %s exists", id, dir)
		}
	}
	return RemoveImage(img)
}
