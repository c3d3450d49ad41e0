package layer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// copyTree copies the tree at src into dst (created if missing) with every
// attribute overlayfs relies on: owners, modes, times, xattrs (its
// trusted.overlay.* opaque and redirect marks) and whiteouts (0:0 character
// devices). It runs cp(1) -a, which does all of that as root.
func copyTree(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "cp", "-a", "--", src+"/.", dst+"/").CombinedOutput()
	if err != nil {
		return fmt.Errorf("copy the sandbox's files: %w: %s", err, sandboxPaths(string(out), src, dst))
	}
	return nil
}

// maxCopyOutput bounds what an error keeps of cp's output.
const maxCopyOutput = 512

// sandboxPaths is cp's output with src and dst taken off the paths it
// names, so that an error names the sandbox's paths and not the host's (it
// reaches tenants: a snapshot's or a build step's failure), bounded.
func sandboxPaths(out, src, dst string) string {
	out = strings.ReplaceAll(out, src+"/.", "")
	out = strings.TrimSpace(strings.ReplaceAll(out, dst, ""))
	if len(out) > maxCopyOutput {
		out = out[:maxCopyOutput] + "…"
	}
	return out
}

// SaveUpper copies the writable part of the layer of id (what the sandbox
// wrote, deleted and renamed) to dst, which must not exist yet. Freeze the
// sandbox first for a consistent copy. On error dst is removed.
func (s *Store) SaveUpper(ctx context.Context, id, dst string) error {
	dir, err := s.dir(id)
	if err != nil {
		return err
	}
	if !Mounted(dir) {
		return fmt.Errorf("save layer %s: %w", id, ErrNotMounted)
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("save layer %s: %s exists", id, dst)
	}
	if err := copyTree(ctx, paths(dir).Upper, dst); err != nil {
		_ = os.RemoveAll(dst)
		return fmt.Errorf("save layer %s: %w", id, err)
	}
	return nil
}

// PrepareFrom is Prepare with the upper layer seeded from a copy that
// SaveUpper wrote (resume after a pause, fork, snapshot): the sandbox sees
// the files exactly as they were saved (they count against the quota). An
// empty seed is Prepare.
func (s *Store) PrepareFrom(ctx context.Context, id, lower string, diskBytes int64, ownerUID uint32, seed string) (string, error) {
	dir, err := s.dir(id)
	if err != nil {
		return "", err
	}
	if seed != "" {
		if seed, err = filepath.Abs(seed); err != nil {
			return "", err
		}
	}
	if err := s.clearImage(id, ownerUID); err != nil {
		return "", err
	}
	l, err := Prepare(dir, lower, Options{DiskBytes: diskBytes, Inodes: s.Inodes, OwnerUID: ownerUID, OwnerGID: ownerUID,
		Seed: seed, Image: s.image(id, ownerUID), ctx: ctx})
	if err != nil {
		return "", err
	}
	return l.Rootfs, nil
}
