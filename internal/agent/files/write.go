package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// writeFile writes src into dst in place, as envd does, but with u's
// credentials (identity.As): open with O_CREAT|O_TRUNC (a final symlink is
// written through, like open(2)), then the body, then metadata md
// (replacing what the file had). Every path is resolved and every file
// opened or created as u, so a symlink or hard link u planted can lead only
// where u may write. A file it creates is owned by u; so is an existing one
// written as root (envd's chown), while an existing file u may write but
// does not own keeps its owner. So
// every observer sees what a plain write gives: a watcher gets CREATE (new
// file) and WRITE events on dst itself and never a name of the agent's own.
// A file created here gets FileMode; an existing one keeps its mode. Missing
// parent directories are created owned by u.
//
// Writes to one file through the agent are serialised (pathLocks), so
// concurrent uploads to a path land one after the other, each whole. A reader
// during a write may see it partly done, as on E2B. If the write fails, a
// file this call created is removed; an existing file is left as the failure
// found it (truncated or partly written), as envd leaves it.
func writeFile(dst string, src io.Reader, u identity.User, md map[string]string) error {
	return identity.As(u, func() error { return writeAs(dst, src, u, md) })
}

// writeAs is writeFile on the thread that carries u's credentials.
func writeAs(dst string, src io.Reader, u identity.User, md map[string]string) error {
	dst, err := writeTarget(dst)
	if err != nil {
		return err
	}
	defer pathLocks.lock(dst)()
	if _, err := fsutil.EnsureDirs(filepath.Dir(dst), int(u.UID), int(u.GID)); err != nil {
		return err
	}
	_, lerr := os.Lstat(dst) // a dangling symlink's target is created too, but not removed on failure
	created := errors.Is(lerr, fs.ErrNotExist)
	f, _, err := openFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_CLOEXEC)
	if err != nil {
		return fsutil.Classify(err) // "open <dst>: <why>"
	}
	err = fill(f, src, u, md, created)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fsutil.Classify(fmt.Errorf("write %s: %w", dst, cerr))
	}
	if err != nil && created {
		_ = os.Remove(dst)
	}
	return err
}

// writeTarget follows a final symlink at dst and refuses directories.
func writeTarget(dst string) (string, error) {
	fi, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return dst, nil
	}
	if err != nil {
		return "", fsutil.Classify(err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(dst); err == nil {
			dst = real
			fi, err = os.Stat(dst)
			if err != nil {
				return "", fsutil.Classify(err)
			}
		}
	}
	if fi.IsDir() {
		return "", fmt.Errorf("%w: path is a directory: %s", fsutil.ErrInvalid, dst)
	}
	return dst, nil
}

// fill gives f its owner (when created here or written as root) and
// FileMode (when created here), copies src into it, then replaces its
// metadata with md.
func fill(f *os.File, src io.Reader, u identity.User, md map[string]string, created bool) error {
	if created || u.UID == 0 {
		if err := f.Chown(int(u.UID), int(u.GID)); err != nil {
			return fsutil.Classify(err)
		}
	}
	if created {
		if err := ensureMode(f); err != nil {
			return err
		}
	}
	sr := &sourceReader{r: src}
	if _, err := io.Copy(f, sr); err != nil {
		if sr.err != nil {
			return withStatus(http.StatusBadRequest, fmt.Errorf("reading request body: %w", sr.err))
		}
		return fsutil.Classify(fmt.Errorf("write %s: %w", f.Name(), err))
	}
	return fsutil.ReplaceMetadata(int(f.Fd()), md)
}

// chmod is (*os.File).Chmod; tests count its calls.
var chmod = (*os.File).Chmod

// ensureMode gives a file created here FileMode whatever the umask, with no
// chmod when open(2) already gave it that (the usual umask 022): as envd's
// create, which only chowns, a watcher sees one CHMOD event, not two.
func ensureMode(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fsutil.Classify(err)
	}
	if fi.Mode().Perm() == fsutil.FileMode {
		return nil
	}
	if err := chmod(f, fsutil.FileMode); err != nil {
		return fsutil.Classify(err)
	}
	return nil
}

// sourceReader remembers a failure to read the request body (the client's
// fault, 400) apart from a failure to write the file.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}
