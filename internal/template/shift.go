package template

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// ShiftCopy copies src to dst (cp -a: hardlinks, xattrs, modes) and adds
// base to every uid and gid in dst. chown clears setuid/setgid bits and file
// capabilities, so both are restored after each chown.
func ShiftCopy(ctx context.Context, src, dst string, base uint32) error {
	if out, err := exec.CommandContext(ctx, "cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		if mkErr := os.MkdirAll(dst, 0o755); mkErr == nil {
			out, err = exec.CommandContext(ctx, "cp", "-a", src+"/.", dst).CombinedOutput()
		}
		if err != nil {
			return fmt.Errorf("copy %s: %w: %s", src, err, out)
		}
	}
	return Shift(ctx, dst, base)
}

// Shift adds base to the owner of every entry under root, in place.
func Shift(ctx context.Context, root string, base uint32) error {
	seen := map[uint64]bool{} // inodes already shifted (hardlinks)
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		return shiftOne(p, &st, base)
	})
}

func shiftOne(p string, st *unix.Stat_t, base uint32) error {
	if st.Uid >= base && st.Gid >= base {
		return nil // already shifted
	}
	isLink := st.Mode&syscall.S_IFMT == syscall.S_IFLNK
	var caps []byte
	if !isLink {
		if sz, err := unix.Lgetxattr(p, "security.capability", nil); err == nil && sz > 0 {
			caps = make([]byte, sz)
			_, _ = unix.Lgetxattr(p, "security.capability", caps)
		}
	}
	if err := unix.Lchown(p, int(st.Uid+base), int(st.Gid+base)); err != nil {
		return fmt.Errorf("chown %s: %w", p, err)
	}
	if isLink {
		return nil
	}
	if st.Mode&(syscall.S_ISUID|syscall.S_ISGID) != 0 {
		if err := unix.Chmod(p, st.Mode&07777); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	if caps != nil {
		_ = unix.Lsetxattr(p, "security.capability", caps, 0)
	}
	return nil
}
