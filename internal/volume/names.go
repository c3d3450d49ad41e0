package volume

import (
	"fmt"
	"path"
	"strings"
)

// MaxMounts bounds the volume mounts of one sandbox.
const MaxMounts = 8

// maxNameLen bounds a volume name.
const maxNameLen = 64

// ValidName reports whether name is a volume name: 1-64 characters of
// [A-Za-z0-9_-] (E2B refuses spaces, dots, slashes and braces too).
func ValidName(name string) bool {
	if name == "" || len(name) > maxNameLen {
		return false
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// reservedMounts are sandbox paths no volume may cover or sit under: the
// kernel's views and the agent's own directory.
var reservedMounts = []string{"/proc", "/sys", "/dev", "/.sbx"}

// CheckMountPath validates where a volume is mounted inside a sandbox: an
// absolute, clean path, not "/" and not in or over a reserved path.
func CheckMountPath(p string) error {
	switch {
	case p == "" || !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w: mount path %.64q must be absolute", ErrInvalid, p)
	case len(p) > 1024 || strings.ContainsRune(p, 0):
		return fmt.Errorf("%w: mount path %q is too long or holds a NUL", ErrInvalid, trunc(p))
	case path.Clean(p) != p:
		return fmt.Errorf("%w: mount path %.64q is not clean (want %.64q)", ErrInvalid, p, path.Clean(p))
	case p == "/":
		return fmt.Errorf("%w: a volume cannot be mounted at /", ErrInvalid)
	}
	for _, r := range reservedMounts {
		if within(p, r) {
			return fmt.Errorf("%w: mount path %.64q is reserved (%s)", ErrInvalid, p, r)
		}
	}
	return nil
}

// CheckMountPaths validates a sandbox's mount paths together: each one,
// their number, and that none is the same as or nested in another (the
// mount order would decide what a sandbox sees).
func CheckMountPaths(paths []string) error {
	if len(paths) > MaxMounts {
		return fmt.Errorf("%w: %d volume mounts, at most %d", ErrInvalid, len(paths), MaxMounts)
	}
	for i, p := range paths {
		if err := CheckMountPath(p); err != nil {
			return err
		}
		for _, q := range paths[:i] {
			if within(p, q) || within(q, p) {
				return fmt.Errorf("%w: volume mount paths %.64q and %.64q overlap", ErrInvalid, q, p)
			}
		}
	}
	return nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
