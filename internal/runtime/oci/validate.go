package oci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// ErrInvalidSpec is wrapped by every error about a malformed runtime.Spec.
var ErrInvalidSpec = errors.New("oci: invalid sandbox spec")

// validate checks s before anything is created on the host.
func validate(s runtime.Spec) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, a...))
	}
	switch {
	case !validID(s.ID):
		return bad("id %q: want [a-z0-9]{1,64}", s.ID)
	case !filepath.IsAbs(s.Rootfs):
		return bad("rootfs %q is not an absolute path", s.Rootfs)
	case len(s.Args) == 0 || s.Args[0] == "":
		return bad("no init argv")
	case s.NetNSPath != "" && !filepath.IsAbs(s.NetNSPath):
		return bad("netns %q is not an absolute path", s.NetNSPath)
	case s.Limits.MemoryBytes < 0 || s.Limits.CPUMillis < 0 || s.Limits.Pids < 0:
		return bad("negative limit %+v", s.Limits)
	}
	if fi, err := os.Stat(s.Rootfs); err != nil || !fi.IsDir() {
		return bad("rootfs %q is not a directory (%v)", s.Rootfs, err)
	}
	for _, e := range s.Env {
		if !strings.Contains(e, "=") {
			return bad("env entry %q is not KEY=VALUE", e)
		}
	}
	for _, m := range s.Mounts {
		if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Destination) {
			return bad("mount %s -> %s: paths must be absolute", m.Source, m.Destination)
		}
	}
	return nil
}

// resolve returns s with its rootfs as a real path: runc refuses a rootfs
// reached through a symlink.
func resolve(s runtime.Spec) (runtime.Spec, error) {
	real, err := filepath.EvalSymlinks(s.Rootfs)
	if err != nil {
		return s, fmt.Errorf("%w: rootfs: %w", ErrInvalidSpec, err)
	}
	s.Rootfs = real
	return s, nil
}
