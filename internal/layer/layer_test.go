package layer

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPrepareWritesLandInUpper(t *testing.T) {
	needRoot(t)
	lower, dir := newLower(t), newDir(t)
	l, err := Prepare(dir, lower, Options{DiskBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(l.Rootfs, "base.txt")); string(b) != "template" {
		t.Fatalf("lower not visible: %q", b)
	}
	must(t, os.WriteFile(filepath.Join(l.Rootfs, "base.txt"), []byte("changed"), 0o644))
	must(t, os.WriteFile(filepath.Join(l.Rootfs, "new.txt"), []byte("new"), 0o644))
	must(t, os.Remove(filepath.Join(l.Rootfs, "dir", "f")))
	must(t, os.Rename(filepath.Join(l.Rootfs, "dir"), filepath.Join(l.Rootfs, "moved")))
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(lower, "base.txt"), "template"},
		{filepath.Join(lower, "dir", "f"), "f"},
		{filepath.Join(l.Upper, "base.txt"), "changed"},
		{filepath.Join(l.Upper, "new.txt"), "new"},
	} {
		if b, err := os.ReadFile(tc.path); err != nil || string(b) != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.path, b, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(lower, "new.txt")); !os.IsNotExist(err) {
		t.Error("a write reached the template")
	}
	var fs unix.Statfs_t
	must(t, unix.Statfs(l.Upper, &fs))
	if fs.Type != unix.TMPFS_MAGIC {
		t.Errorf("upper is on fs type %#x, want tmpfs", fs.Type)
	}
}

func TestUserXattrs(t *testing.T) {
	needRoot(t)
	lower, dir := newLower(t), newDir(t)
	l, err := Prepare(dir, lower, Options{DiskBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(l.Rootfs, "base.txt")
	if err := unix.Setxattr(root, "user.e2b.k", []byte("v"), 0); err != nil {
		t.Fatalf("user xattr as root: %v", err)
	}
	owned := filepath.Join(l.Rootfs, "home", "user", "f")
	must(t, os.WriteFile(owned, nil, 0o644))
	must(t, os.Chown(owned, 1000, 1000))
	if _, err := exec.LookPath("setfattr"); err != nil {
		t.Skip("setfattr (attr) not installed")
	}
	cmd := exec.Command("setfattr", "-n", "user.e2b.k", "-v", "v", owned)
	// group 0: the layer's directory is 0710 root:<sandbox root's gid> (fence)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{0}}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("user xattr as uid 1000: %v: %s", err, out)
	}
	buf := make([]byte, 8)
	if n, err := unix.Getxattr(owned, "user.e2b.k", buf); err != nil || string(buf[:n]) != "v" {
		t.Fatalf("read back %q, %v", buf[:n], err)
	}
}

// TestFence: the layer's tree (which holds setuid files sandbox root made)
// is reachable only by host root and sandbox root's host group; where
// sandbox root is host root (gVisor) the overlay is also nosuid.
func TestFence(t *testing.T) {
	needRoot(t)
	for _, id := range []uint32{0, 100000} {
		lower, dir := newLower(t), newDir(t)
		l, err := Prepare(dir, lower, Options{DiskBytes: 8 << 20, OwnerUID: id, OwnerGID: id})
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		must(t, unix.Stat(l.Dir, &st))
		if st.Mode&0o7777 != 0o710 || st.Uid != 0 || st.Gid != id {
			t.Errorf("owner %d: layer dir %o %d:%d, want 710 0:%d", id, st.Mode&0o7777, st.Uid, st.Gid, id)
		}
		var fs unix.Statfs_t
		must(t, unix.Statfs(l.Rootfs, &fs))
		if nosuid := fs.Flags&unix.ST_NOSUID != 0; nosuid != (id == 0) {
			t.Errorf("owner %d: overlay nosuid %v, want %v", id, nosuid, id == 0)
		}
		nobody := exec.Command("cat", filepath.Join(l.Rootfs, "base.txt"))
		nobody.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := nobody.CombinedOutput(); err == nil {
			t.Errorf("owner %d: a host user read the sandbox's files: %s", id, out)
		}
	}
}

func TestQuota(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name  string
		opts  Options
		write func(root string) error
	}{
		{"bytes", Options{DiskBytes: 4 << 20}, func(root string) error {
			return os.WriteFile(filepath.Join(root, "big"), make([]byte, 8<<20), 0o644)
		}},
		{"inodes", Options{DiskBytes: 8 << 20, Inodes: 64}, func(root string) error {
			for i := range 128 {
				if err := os.WriteFile(filepath.Join(root, "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), nil, 0o644); err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Prepare(newDir(t), newLower(t), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.write(l.Rootfs); !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("write past quota = %v, want ENOSPC", err)
			}
		})
	}
}

func TestOwnerAndMode(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name     string
		uid, gid uint32
		mode     os.FileMode
	}{
		{"gvisor", 0, 0, 0o755},
		{"userns", 100000, 100000, 0o755},
		{"odd-mode", 100000, 100001, 0o750},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lower := newLower(t)
			must(t, os.Chmod(lower, tc.mode))
			l, err := Prepare(newDir(t), lower, Options{DiskBytes: 1 << 20, OwnerUID: tc.uid, OwnerGID: tc.gid})
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(l.Rootfs)
			must(t, err)
			st := fi.Sys().(*syscall.Stat_t)
			if st.Uid != tc.uid || st.Gid != tc.gid || fi.Mode().Perm() != tc.mode {
				t.Errorf("root %d:%d %v, want %d:%d %v", st.Uid, st.Gid, fi.Mode().Perm(), tc.uid, tc.gid, tc.mode)
			}
		})
	}
}
