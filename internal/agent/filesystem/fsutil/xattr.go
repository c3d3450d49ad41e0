package fsutil

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Metadata limits, as envd enforces them.
const (
	// MetadataPrefix is the xattr namespace of user metadata.
	MetadataPrefix = "user.e2b."
	// MaxMetadataKey is the longest key: XATTR_NAME_MAX (255) minus the prefix.
	MaxMetadataKey = 255 - len(MetadataPrefix)
	// MaxMetadataTotal bounds the sum of all key and value lengths.
	MaxMetadataTotal = 4096
)

// ValidateMetadata checks keys and values: printable ASCII only, keys
// non-empty and at most MaxMetadataKey bytes, and all keys and values
// together at most MaxMetadataTotal bytes. Errors wrap ErrInvalid.
func ValidateMetadata(md map[string]string) error {
	total := 0
	for k, v := range md {
		if k == "" || len(k) > MaxMetadataKey {
			return invalidf("metadata key %q must be 1 to %d bytes", k, MaxMetadataKey)
		}
		if !printable(k) || !printable(v) {
			return invalidf("metadata %q: keys and values must be printable ASCII", k)
		}
		total += len(k) + len(v)
	}
	if total > MaxMetadataTotal {
		return invalidf("metadata is %d bytes, more than %d", total, MaxMetadataTotal)
	}
	return nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// ReadMetadata returns the user.e2b.* xattrs of p (not following a final
// symlink) with the prefix removed, or nil when there are none or the
// filesystem has no xattrs.
func ReadMetadata(p string) map[string]string {
	names, err := listXattr(p)
	if err != nil {
		return nil
	}
	var md map[string]string
	for _, name := range names {
		key, ok := strings.CutPrefix(name, MetadataPrefix)
		if !ok {
			continue
		}
		val, err := getXattr(p, name)
		if err != nil {
			continue
		}
		if md == nil {
			md = map[string]string{}
		}
		md[key] = string(val)
	}
	return md
}

// ReplaceMetadata makes md the user.e2b.* xattrs of the open file fd: keys
// it does not name are removed (an upload replaces a file's metadata). A
// filesystem without xattrs is an error only when md is not empty.
func ReplaceMetadata(fd int, md map[string]string) error {
	names, err := splitNames(func(b []byte) (int, error) { return unix.Flistxattr(fd, b) })
	if err != nil && len(md) > 0 {
		return Classify(fmt.Errorf("list metadata: %w", err))
	}
	for _, name := range names {
		key, ok := strings.CutPrefix(name, MetadataPrefix)
		if _, keep := md[key]; !ok || keep {
			continue
		}
		if err := unix.Fremovexattr(fd, name); err != nil && err != unix.ENODATA {
			return Classify(fmt.Errorf("remove metadata %q: %w", key, err))
		}
	}
	for k, v := range md {
		if err := unix.Fsetxattr(fd, MetadataPrefix+k, []byte(v), 0); err != nil {
			return Classify(fmt.Errorf("set metadata %q: %w", k, err))
		}
	}
	return nil
}

func listXattr(p string) ([]string, error) {
	return splitNames(func(b []byte) (int, error) { return unix.Llistxattr(p, b) })
}

// splitNames calls list (a listxattr(2) flavour) for the size, then the
// NUL-separated names.
func splitNames(list func([]byte) (int, error)) ([]string, error) {
	size, err := list(nil)
	if err != nil || size == 0 {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := list(buf)
	if err != nil {
		return nil, err
	}
	s := strings.TrimRight(string(buf[:n]), "\x00")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\x00"), nil
}

func getXattr(p, name string) ([]byte, error) {
	size, err := unix.Lgetxattr(p, name, nil)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := unix.Lgetxattr(p, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
