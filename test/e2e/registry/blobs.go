package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// blobStore keeps blobs in dir/<algorithm>/<hex>. Unlike the registry's disk
// handler it trusts its files (no hashing on every HEAD and GET).
type blobStore struct{ dir string }

func (s *blobStore) path(h v1.Hash) string { return filepath.Join(s.dir, h.Algorithm, h.Hex) }

func (s *blobStore) Stat(_ context.Context, _ string, h v1.Hash) (int64, error) {
	fi, err := os.Stat(s.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, registry.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (s *blobStore) Get(_ context.Context, _ string, h v1.Hash) (io.ReadCloser, error) {
	f, err := os.Open(s.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, registry.ErrNotFound
	}
	return f, err
}

func (s *blobStore) Put(_ context.Context, _ string, h v1.Hash, rc io.ReadCloser) error {
	defer rc.Close()
	f, err := os.CreateTemp(s.dir, "upload-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rc) // the registry checks the digest as it is read
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.adopt(f.Name(), h)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func (s *blobStore) Delete(_ context.Context, _ string, h v1.Hash) error {
	err := os.Remove(s.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return registry.ErrNotFound
	}
	return err
}

func (s *blobStore) adopt(file string, h v1.Hash) error {
	if err := os.MkdirAll(filepath.Join(s.dir, h.Algorithm), 0o755); err != nil {
		return err
	}
	return os.Rename(file, s.path(h))
}

// cleanStale removes the blob directories of runs that were killed.
func cleanStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tmpGlob))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}
