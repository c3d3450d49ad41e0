package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// capNetRaw is a security.capability value (VFS_CAP_REVISION_2,
// effective) granting CAP_NET_RAW.
func capNetRaw() string {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], 0x02000000|1)
	binary.LittleEndian.PutUint32(b[4:], 1<<unix.CAP_NET_RAW)
	return string(b)
}

// TestUnpackKeepsMetadata: owners, modes with setuid, times, symlink text,
// hardlinks, FIFOs and the allowed xattrs survive; other xattrs do not.
func TestUnpackKeepsMetadata(t *testing.T) {
	needRoot(t)
	mt := time.Unix(1600000000, 123456789)
	owned := file("app/f", "data")
	owned.uid, owned.gid, owned.mode, owned.mtime = 1000, 1001, 0o640, mt
	owned.pax = map[string]string{"SCHILY.xattr.user.note": "hi", "SCHILY.xattr.trusted.evil": "x"}
	appDir := dir("app/")
	appDir.uid, appDir.mode, appDir.mtime = 1000, 0o750, mt
	suid := file("bin/su", "#!")
	suid.mode = 0o4755
	ping := file("bin/ping", "elf")
	ping.pax = map[string]string{"SCHILY.xattr.security.capability": capNetRaw()}
	link := symlink("app/link", "../bin/su")
	link.uid, link.gid = 1000, 1000
	fifo := ent{name: "app/fifo", typ: tar.TypeFifo, mode: 0o620, uid: 1000}
	data := tarOf(t, appDir, owned, suid, ping, link, fifo, hardlink("app/f2", "app/f"))
	dst := t.TempDir()
	must(t, Unpack(context.Background(), bytes.NewReader(data), dst, 1<<20, nil))

	checkStat(t, filepath.Join(dst, "app/f"), unix.S_IFREG|0o640, 1000, 1001)
	checkStat(t, filepath.Join(dst, "app"), unix.S_IFDIR|0o750, 1000, 0)
	checkStat(t, filepath.Join(dst, "bin/su"), unix.S_IFREG|0o4755, 0, 0)
	checkStat(t, filepath.Join(dst, "app/link"), unix.S_IFLNK|0o777, 1000, 1000)
	checkStat(t, filepath.Join(dst, "app/fifo"), unix.S_IFIFO|0o620, 1000, 0)
	if got, err := os.Readlink(filepath.Join(dst, "app/link")); err != nil || got != "../bin/su" {
		t.Errorf("symlink text = %q %v", got, err)
	}
	var a, b unix.Stat_t
	must(t, unix.Lstat(filepath.Join(dst, "app/f"), &a))
	must(t, unix.Lstat(filepath.Join(dst, "app/f2"), &b))
	if a.Ino != b.Ino || a.Nlink != 2 {
		t.Errorf("hardlink: inodes %d %d, nlink %d", a.Ino, b.Ino, a.Nlink)
	}
	for _, p := range []string{"app/f", "app"} {
		var st unix.Stat_t
		must(t, unix.Lstat(filepath.Join(dst, p), &st))
		if st.Mtim.Sec != mt.Unix() || st.Mtim.Nsec != int64(mt.Nanosecond()) {
			t.Errorf("%s mtime = %v, want %v", p, st.Mtim, mt)
		}
	}
	checkXattr(t, filepath.Join(dst, "app/f"), "user.note", "hi")
	checkXattr(t, filepath.Join(dst, "bin/ping"), "security.capability", capNetRaw())
	if _, err := unix.Lgetxattr(filepath.Join(dst, "app/f"), "trusted.evil", make([]byte, 64)); err == nil {
		t.Error("trusted.evil xattr was set")
	}
}

func checkStat(t *testing.T, p string, mode uint32, uid, gid uint32) {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(p, &st))
	if st.Mode != mode || st.Uid != uid || st.Gid != gid {
		t.Errorf("%s: mode %o owner %d:%d, want mode %o owner %d:%d", p, st.Mode, st.Uid, st.Gid, mode, uid, gid)
	}
}

func checkXattr(t *testing.T, p, name, want string) {
	t.Helper()
	buf := make([]byte, 256)
	n, err := unix.Lgetxattr(p, name, buf)
	if err != nil || string(buf[:n]) != want {
		t.Errorf("%s xattr %s = %q %v, want %q", p, name, buf[:max(n, 0)], err, want)
	}
}

// TestWhiteoutsInOverlay: OCI whiteouts become overlayfs whiteouts and an
// opaque mark, and an overlay mount of the two layers hides what they
// delete: the format is the kernel's.
func TestWhiteoutsInOverlay(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	lower, upper, mnt := t.TempDir(), t.TempDir(), t.TempDir()
	must(t, Unpack(ctx, bytes.NewReader(tarOf(t,
		dir("d/"), file("d/a", "a"), file("foo", "foo"), file("keep", "k"))), lower, 1<<20, nil))
	must(t, Unpack(ctx, bytes.NewReader(tarOf(t,
		file(".wh.foo", ""), dir("d/"), file("d/.wh..wh..opq", ""), file("d/b", "b"))), upper, 1<<20, nil))

	var st unix.Stat_t
	must(t, unix.Lstat(filepath.Join(upper, "foo"), &st))
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Fatalf("whiteout foo: mode %o rdev %d, want a 0:0 character device", st.Mode, st.Rdev)
	}
	checkXattr(t, filepath.Join(upper, "d"), "trusted.overlay.opaque", "y")
	for _, n := range []string{".wh.foo", "d/.wh..wh..opq"} {
		if _, err := os.Lstat(filepath.Join(upper, n)); !os.IsNotExist(err) {
			t.Errorf("%s left in the layer", n)
		}
	}

	must(t, unix.Mount("overlay", mnt, "overlay", unix.MS_RDONLY, "lowerdir="+upper+":"+lower))
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	for p, want := range map[string]bool{"foo": false, "keep": true, "d/a": false, "d/b": true} {
		_, err := os.Lstat(filepath.Join(mnt, p))
		if got := err == nil; got != want {
			t.Errorf("%s visible in the overlay = %v, want %v (%v)", p, got, want, err)
		}
	}
}
