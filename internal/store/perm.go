package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// privateFiles makes the database and its WAL and shared-memory files
// 0600 (creating the database so): records hold tokens and egress proxy
// credentials. SQLite gives the -wal and -shm files it creates the
// database file's mode.
func privateFiles(db string) error {
	f, err := os.OpenFile(db, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	f.Close()
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("open store: %w", err)
		}
	}
	return nil
}
