package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// sharedStorage is --shared-dir: a directory every node of the cluster
// mounts, holding paused images and snapshots. Its id is kept in the
// directory itself (made by the first node to open it), so nodes that
// report the same id have mounted the same storage, whatever its path.
type sharedStorage struct {
	dir, id string
}

// storageIDFile holds the shared storage's id, in its root.
const storageIDFile = "sbx-storage-id"

// open checks the directory, makes its image directories, and reads (or
// makes, exactly once across nodes: O_EXCL) its id.
func (s *sharedStorage) open() error {
	if !filepath.IsAbs(s.dir) {
		return fmt.Errorf("--shared-dir %q: want an absolute path", s.dir)
	}
	if fi, err := os.Stat(s.dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("--shared-dir %q: not a directory (mount the shared storage first): %v", s.dir, err)
	}
	for _, sub := range []string{"paused", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(s.dir, sub), 0o700); err != nil {
			return fmt.Errorf("--shared-dir: %w", err)
		}
	}
	p := filepath.Join(s.dir, storageIDFile)
	if err := makeStorageID(p); err != nil {
		return fmt.Errorf("--shared-dir: storage id: %w", err)
	}
	got, err := os.ReadFile(p)
	if s.id = strings.TrimSpace(string(got)); err != nil || !strings.HasPrefix(s.id, "storage-") {
		return fmt.Errorf("--shared-dir: storage id in %s unreadable (%v): remove it only if no node uses the storage", p, err)
	}
	return nil
}

// makeStorageID writes a new id to p unless p exists: written in full to
// a file of its own, then hard-linked to p (atomic, and refused if p
// exists, on NFS too), so a node never reads a half-written id.
func makeStorageID(p string) error {
	var b [16]byte
	_, _ = rand.Read(b[:])
	tmp := p + ".tmp-" + hex.EncodeToString(b[:4])
	err := os.WriteFile(tmp, []byte("storage-"+hex.EncodeToString(b[:])+"\n"), 0o600)
	if err == nil {
		err = os.Link(tmp, p)
	}
	_ = os.Remove(tmp)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}
