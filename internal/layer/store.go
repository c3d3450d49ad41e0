package layer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Store keeps one layer per sandbox id under Dir (Dir/<id>). It holds no
// state besides the directories and the mount table, so a new Store after a
// restart sees every layer. Safe for concurrent use on different ids.
type Store struct {
	Dir string
	// Inodes caps files per layer; 0 means Options' default.
	Inodes uint64
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
func (s *Store) Prepare(_ context.Context, id, lower string, diskBytes int64, ownerUID uint32) (string, error) {
	dir, err := s.dir(id)
	if err != nil {
		return "", err
	}
	l, err := Prepare(dir, lower, Options{DiskBytes: diskBytes, Inodes: s.Inodes, OwnerUID: ownerUID, OwnerGID: ownerUID})
	if err != nil {
		return "", err
	}
	return l.Rootfs, nil
}

// Rootfs returns the merged rootfs of id and whether it is mounted.
func (s *Store) Rootfs(id string) (string, bool) {
	dir, err := s.dir(id)
	if err != nil {
		return "", false
	}
	return paths(dir).Rootfs, Mounted(dir)
}

// Remove unmounts and deletes the layer of id; a missing layer is not an error.
func (s *Store) Remove(id string) error {
	dir, err := s.dir(id)
	if err != nil {
		return err
	}
	return Cleanup(dir)
}

// List returns the ids that have a layer directory, mounted or not (a
// directory without mounts is a crash's leftover: Remove reaps it).
func (s *Store) List() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("layer store: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}
