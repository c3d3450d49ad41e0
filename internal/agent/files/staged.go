package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// staged is an uploaded file written to a temporary name next to its target;
// commit renames it into place, so a reader never sees a torn file.
type staged struct {
	tmp, dst string
}

// sourceError marks a failure to read the request body (the client's fault).
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

// stage streams src into a new file beside dst owned by u with mode 0644 and
// metadata md, creating missing parent directories owned by u. A final
// symlink at dst is written through, like open(2) would. On error nothing is
// left behind but the created directories.
func stage(dst string, src io.Reader, u identity.User, md map[string]string) (*staged, error) {
	dst, err := writeTarget(dst)
	if err != nil {
		return nil, err
	}
	if _, err := fsutil.EnsureDirs(filepath.Dir(dst), int(u.UID), int(u.GID)); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".sbx-upload-*")
	if err != nil {
		return nil, fsutil.Classify(fmt.Errorf("create temporary file: %w", err))
	}
	s := &staged{tmp: f.Name(), dst: dst}
	if err := fill(f, src, u, md); err != nil {
		f.Close()
		s.abort()
		return nil, err
	}
	if err := f.Close(); err != nil {
		s.abort()
		return nil, fsutil.Classify(fmt.Errorf("write %s: %w", dst, err))
	}
	return s, nil
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

// fill sets owner, mode and metadata on f, then copies src into it.
func fill(f *os.File, src io.Reader, u identity.User, md map[string]string) error {
	if err := f.Chmod(fsutil.FileMode); err != nil {
		return fsutil.Classify(err)
	}
	if err := f.Chown(int(u.UID), int(u.GID)); err != nil {
		return fsutil.Classify(err)
	}
	if err := fsutil.SetMetadata(int(f.Fd()), md); err != nil {
		return err
	}
	sr := &sourceReader{r: src}
	if _, err := io.Copy(f, sr); err != nil {
		if sr.err != nil {
			return withStatus(http.StatusBadRequest, fmt.Errorf("reading request body: %w", sr.err))
		}
		return fsutil.Classify(fmt.Errorf("write %s: %w", f.Name(), err))
	}
	return nil
}

// commit renames the file into place.
func (s *staged) commit() error {
	if err := os.Rename(s.tmp, s.dst); err != nil {
		s.abort()
		return fsutil.Classify(fmt.Errorf("rename into %s: %w", s.dst, err))
	}
	return nil
}

// abort removes the temporary file.
func (s *staged) abort() { _ = os.Remove(s.tmp) }
