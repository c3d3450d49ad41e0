package oci

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// DirStore is a LayerStore keeping each layer in directory Dir/KEY. A layer
// is filled in a temporary directory beside it and renamed into place, so
// Dir/KEY is either absent or complete. Concurrent Ensures of one key in
// this process fill it once; across processes the first rename wins and the
// others' copies are dropped.
type DirStore struct {
	Dir string

	mu   sync.Mutex
	keys map[string]*sync.Mutex
}

// Ensure implements LayerStore. key must be a plain file name.
func (s *DirStore) Ensure(ctx context.Context, key string, fill func(dir string) error) (string, error) {
	if key == "" || key == "." || key == ".." || strings.ContainsAny(key, "/\x00") || strings.HasPrefix(key, ".") {
		return "", fmt.Errorf("layer store %s: bad key %q", s.Dir, key)
	}
	unlock := s.lock(key)
	defer unlock()
	final := filepath.Join(s.Dir, key)
	if fi, err := os.Lstat(final); err == nil && fi.IsDir() {
		return final, nil
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(s.Dir, ".tmp-"+key+"-")
	if err != nil {
		return "", fmt.Errorf("layer store: %w", err)
	}
	if err := s.fillInto(tmp, fill); err != nil {
		_ = os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.RemoveAll(tmp)
		if fi, serr := os.Lstat(final); serr == nil && fi.IsDir() {
			return final, nil // another process stored it first
		}
		return "", fmt.Errorf("layer store: %w", err)
	}
	return final, nil
}

// fillInto gives the temporary directory the usual root mode (a layer
// without a "./" entry keeps it) and fills it.
func (s *DirStore) fillInto(tmp string, fill func(dir string) error) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("layer store: %w", err)
	}
	return fill(tmp)
}

// lock serializes Ensures of one key and returns the unlock.
func (s *DirStore) lock(key string) func() {
	s.mu.Lock()
	if s.keys == nil {
		s.keys = map[string]*sync.Mutex{}
	}
	m := s.keys[key]
	if m == nil {
		m = &sync.Mutex{}
		s.keys[key] = m
	}
	s.mu.Unlock()
	m.Lock()
	return m.Unlock
}

var _ LayerStore = (*DirStore)(nil)
