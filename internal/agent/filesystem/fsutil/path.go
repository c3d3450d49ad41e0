package fsutil

import (
	"path/filepath"
	"strings"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// MaxPath is the longest path accepted (Linux PATH_MAX).
const MaxPath = 4096

// Resolve turns the path a caller sent into a clean absolute path in the
// agent's filesystem view, as envd does: "~" and "~/x" expand to the user's
// home, relative paths are taken from the home, ".." is resolved lexically.
// Symlinks are not resolved here: they are followed by the operation itself,
// which runs with the caller's credentials (identity.As). Empty paths, NUL bytes,
// over-long paths and "~other" are rejected with ErrInvalid.
func Resolve(p string, u identity.User) (string, error) {
	switch {
	case p == "":
		return "", invalidf("path is empty")
	case strings.IndexByte(p, 0) >= 0:
		return "", invalidf("path contains a NUL byte")
	case len(p) > MaxPath:
		return "", invalidf("path is longer than %d bytes", MaxPath)
	}
	if p[0] == '~' {
		if len(p) > 1 && p[1] != '/' {
			return "", invalidf("cannot expand user-specific home dir in %q", p)
		}
		p = filepath.Join(u.Home, p[1:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(u.Home, p)
	}
	// A home that is not absolute (a broken passwd entry) is taken from "/".
	return filepath.Join("/", p), nil
}
