package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestPrivateFiles: the database and its WAL files are 0600, for a new
// store and for one an older version left 0644.
func TestPrivateFiles(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "sbx.db")
	for _, p := range []string{old, old + "-wal"} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(p, 0o644)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(context.Background(), &Sandbox{ID: "a", State: "running"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{old, old + "-wal", old + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", filepath.Base(p), st.Mode().Perm())
		}
	}
}
