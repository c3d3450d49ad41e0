package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DirMode and FileMode are the modes of what the agent creates.
const (
	DirMode  = 0o755
	FileMode = 0o644
)

// EnsureDirs makes sure the absolute directory dir exists, creating each
// missing component with DirMode owned by uid:gid (even outside the user's
// home, as envd does). Existing components are left as they are; one that is
// not a directory fails with ErrInvalid. Returns the directories it created,
// outermost first.
func EnsureDirs(dir string, uid, gid int) ([]string, error) {
	var missing []string
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return nil, invalidf("%s is not a directory", p)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return nil, Classify(fmt.Errorf("stat %s: %w", p, err))
		}
		missing = append(missing, p)
		if p == "/" {
			break
		}
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := mkdirOwned(missing[i], uid, gid); err != nil {
			return created, err
		}
		created = append(created, missing[i])
	}
	return created, nil
}

// mkdirOwned creates p with DirMode owned by uid:gid; a directory that
// appeared meanwhile (a concurrent creator) is accepted as is.
func mkdirOwned(p string, uid, gid int) error {
	if err := os.Mkdir(p, DirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if fi, serr := os.Stat(p); serr == nil && fi.IsDir() {
				return nil
			}
		}
		return Classify(fmt.Errorf("mkdir %s: %w", p, err))
	}
	if err := os.Chmod(p, DirMode); err != nil {
		return Classify(fmt.Errorf("chmod %s: %w", p, err))
	}
	if err := os.Lchown(p, uid, gid); err != nil {
		return Classify(fmt.Errorf("chown %s: %w", p, err))
	}
	return nil
}
