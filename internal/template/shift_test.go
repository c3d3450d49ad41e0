package template

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const testBase = 100000

// capV2 is a version 2 security.capability granting cap_net_raw (13), effective.
func capV2() []byte {
	c := make([]byte, 20)
	binary.LittleEndian.PutUint32(c, 0x02000001)
	binary.LittleEndian.PutUint32(c[4:], 1<<13)
	return c
}

// synthetic builds a small tree with the cases Shift must handle.
func synthetic(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	must(t, os.Chmod(src, 0o755))
	p := func(n string) string { return filepath.Join(src, n) }
	must(t, os.WriteFile(p("sudo"), []byte("x"), 0o755))
	must(t, os.Chmod(p("sudo"), 0o755|os.ModeSetuid))
	must(t, os.WriteFile(p("sgid"), []byte("x"), 0o755))
	must(t, os.Chown(p("sgid"), 0, 42))
	must(t, os.Chmod(p("sgid"), 0o755|os.ModeSetgid))
	must(t, os.MkdirAll(p("home/user"), 0o755))
	must(t, os.Chown(p("home/user"), 1000, 1000))
	must(t, os.WriteFile(p("home/user/f"), []byte("y"), 0o600))
	must(t, os.Chown(p("home/user/f"), 1000, 1000))
	must(t, os.Link(p("home/user/f"), p("hard")))
	must(t, os.Symlink("/etc/passwd", p("link")))
	must(t, os.Symlink("/nonexistent", p("dangling")))
	must(t, os.WriteFile(p("ping"), []byte("x"), 0o755))
	must(t, unix.Setxattr(p("ping"), capXattr, capV2(), 0))
	must(t, os.WriteFile(p("nobody"), nil, 0o644))
	must(t, os.Chown(p("nobody"), 65534, 65534))
	return src
}

func TestShiftCopy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	src := synthetic(t)
	dst := filepath.Join(t.TempDir(), "rootfs-userns")
	must(t, ShiftCopy(context.Background(), src, dst, testBase))
	must(t, Shift(context.Background(), dst, testBase)) // idempotent
	for _, tc := range []struct {
		path     string
		uid, gid uint32
		mode     os.FileMode // checked when non-zero
	}{
		{".", testBase, testBase, os.ModeDir | 0o755},
		{"sudo", testBase, testBase, 0o755 | os.ModeSetuid},
		{"sgid", testBase, testBase + 42, 0o755 | os.ModeSetgid},
		{"home/user", testBase + 1000, testBase + 1000, os.ModeDir | 0o755},
		{"home/user/f", testBase + 1000, testBase + 1000, 0o600},
		{"hard", testBase + 1000, testBase + 1000, 0o600},
		{"link", testBase, testBase, 0},
		{"dangling", testBase, testBase, 0},
		{"nobody", testBase + 65534, testBase + 65534, 0o644},
	} {
		fi, err := os.Lstat(filepath.Join(dst, tc.path))
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != tc.uid || st.Gid != tc.gid || (tc.mode != 0 && fi.Mode() != tc.mode) {
			t.Errorf("%s: %d:%d %v, want %d:%d %v", tc.path, st.Uid, st.Gid, fi.Mode(), tc.uid, tc.gid, tc.mode)
		}
	}
	assertUnchanged(t, src)
	assertCapsV3(t, filepath.Join(dst, "ping"))
}

// assertUnchanged checks that the source tree and what its symlinks point
// to were not touched.
func assertUnchanged(t *testing.T, src string) {
	t.Helper()
	for _, p := range []string{"/etc/passwd", filepath.Join(src, "sudo"), filepath.Join(src, "home/user")} {
		fi, err := os.Stat(p)
		must(t, err)
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid >= testBase {
			t.Errorf("%s shifted to %d: a symlink was followed or the source changed", p, uid)
		}
	}
}

func assertCapsV3(t *testing.T, p string) {
	t.Helper()
	got := getCaps(p)
	if len(got) != 24 || binary.LittleEndian.Uint32(got)&0xFF000000 != 0x03000000 {
		t.Fatalf("capabilities %x, want version 3", got)
	}
	if !bytes.Equal(got[4:20], capV2()[4:20]) || binary.LittleEndian.Uint32(got[20:]) != testBase {
		t.Fatalf("capabilities %x: sets or rootid wrong", got)
	}
}

func TestShiftCopyRefusesExisting(t *testing.T) {
	dst := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dst, "keep"), nil, 0o644))
	if err := ShiftCopy(context.Background(), t.TempDir(), dst, testBase); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("ShiftCopy onto an existing dir = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "keep")); err != nil {
		t.Fatal("ShiftCopy removed a directory it did not create")
	}
}

func TestCapsV3(t *testing.T) {
	v3 := append(capV2(), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(v3, 0x03000001)
	for _, tc := range []struct {
		name string
		in   []byte
		rev  uint32
	}{
		{"v2", capV2(), 0x03000001},
		{"v3", v3, 0x03000001},
		{"short", []byte{1, 2, 3}, 0},
	} {
		out := capsV3(tc.in, 7)
		if tc.rev == 0 {
			if !bytes.Equal(out, tc.in) {
				t.Errorf("%s: changed to %x", tc.name, out)
			}
			continue
		}
		if binary.LittleEndian.Uint32(out) != tc.rev || binary.LittleEndian.Uint32(out[20:]) != 7 {
			t.Errorf("%s: %x", tc.name, out)
		}
	}
}
