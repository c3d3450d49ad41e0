package template

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ShiftCopy copies src to dst (cp -a: modes, owners, hardlinks, xattrs) and
// shifts dst by base (Shift). dst must not exist; on error it is removed.
func ShiftCopy(ctx context.Context, src, dst string, base uint32) (err error) {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("shift copy: %s: %w", dst, fs.ErrExist)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dst)
		}
	}()
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", "--", src+"/.", dst).CombinedOutput(); err != nil {
		return fmt.Errorf("cp: %w: %s", err, bytes.TrimSpace(out))
	}
	return Shift(ctx, dst, base)
}

// Shift adds base to the owner and group of every entry under root, root
// included, without following symlinks, so that a user namespace mapping
// 0..65535 to base.. sees the original owners. Each inode is shifted once
// (hardlinks); ids already >= base are left alone, so Shift is idempotent.
// chown clears setuid/setgid bits and file capabilities: both are restored,
// capabilities as version 3 with rootid base (a v2 capability is ignored in a
// user namespace whose root is not host root).
func Shift(ctx context.Context, root string, base uint32) error {
	seen := map[inode]bool{}
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if id := (inode{st.Dev, st.Ino}); !seen[id] {
			seen[id] = true
			return shiftOne(p, &st, base)
		}
		return nil
	})
}

func shiftOne(p string, st *unix.Stat_t, base uint32) error {
	uid, gid := shiftID(st.Uid, base), shiftID(st.Gid, base)
	if uid == st.Uid && gid == st.Gid {
		return nil
	}
	isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
	var caps []byte
	if !isLink {
		caps = getCaps(p)
	}
	if err := unix.Lchown(p, int(uid), int(gid)); err != nil {
		return fmt.Errorf("chown %s: %w", p, err)
	}
	if isLink {
		return nil
	}
	if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		if err := unix.Chmod(p, st.Mode&0o7777); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	if caps != nil {
		if err := unix.Lsetxattr(p, capXattr, capsV3(caps, base), 0); err != nil {
			return fmt.Errorf("restore capabilities of %s: %w", p, err)
		}
	}
	return nil
}

type inode struct{ dev, ino uint64 }

func shiftID(id, base uint32) uint32 {
	if id >= base {
		return id
	}
	return id + base
}

const capXattr = "security.capability"

// getCaps returns p's file capabilities, or nil.
func getCaps(p string) []byte {
	buf := make([]byte, 64)
	n, err := unix.Lgetxattr(p, capXattr, buf)
	if err != nil || n == 0 {
		return nil
	}
	return buf[:n]
}

// capsV3 returns vfs capabilities c (v2 or v3) as v3 with rootid; others
// (v1) are returned unchanged.
func capsV3(c []byte, rootid uint32) []byte {
	const rev2, rev3, revMask = 0x02000000, 0x03000000, 0xFF000000
	if len(c) < 20 {
		return c
	}
	magic := binary.LittleEndian.Uint32(c)
	if rev := magic & revMask; rev != rev2 && rev != rev3 {
		return c
	}
	out := make([]byte, 24)
	copy(out, c[:20])
	binary.LittleEndian.PutUint32(out, magic&^revMask|rev3)
	binary.LittleEndian.PutUint32(out[20:], rootid)
	return out
}
