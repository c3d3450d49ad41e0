package layer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSaveAndSeed: a layer copied by SaveUpper and seeded into a new one
// shows the same tree: new and changed files, deletions of template files
// (whiteouts), a template directory replaced by an empty one (opaque), a
// rename of a template directory (redirect), owners and user xattrs.
func TestSaveAndSeed(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	lower := newLower(t)
	s, err := New(t.TempDir())
	must(t, err)
	must(t, os.Chmod(s.Dir, 0o711))
	t.Cleanup(func() { _ = s.Remove("src"); _ = s.Remove("dst") })
	root, err := s.Prepare(ctx, "src", lower, 16<<20, 0)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(root, "home/user/new.txt"), []byte("new"), 0o600))
	must(t, os.Chown(filepath.Join(root, "home/user/new.txt"), 1000, 1000))
	must(t, setUserXattr(filepath.Join(root, "home/user/new.txt")))
	must(t, os.Remove(filepath.Join(root, "base.txt")))
	must(t, os.RemoveAll(filepath.Join(root, "dir")))
	must(t, os.Mkdir(filepath.Join(root, "dir"), 0o755))
	must(t, os.Rename(filepath.Join(root, "home"), filepath.Join(root, "moved")))

	saved := filepath.Join(t.TempDir(), "upper")
	must(t, s.SaveUpper(ctx, "src", saved))
	if err := s.SaveUpper(ctx, "src", saved); err == nil {
		t.Fatal("SaveUpper over an existing copy must fail")
	}
	root2, err := s.PrepareFrom(ctx, "dst", lower, 16<<20, 0, saved)
	must(t, err)
	if b, err := os.ReadFile(filepath.Join(root2, "moved/user/new.txt")); err != nil || string(b) != "new" {
		t.Fatalf("new file: %q %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(root2, "moved/user/new.txt")); err != nil || ownerOf(st) != 1000 {
		t.Fatalf("owner of the new file lost: %v", err)
	}
	if !hasUserXattr(filepath.Join(root2, "moved/user/new.txt")) {
		t.Fatal("user xattr lost")
	}
	for _, gone := range []string{"base.txt", "dir/f", "home"} {
		if _, err := os.Lstat(filepath.Join(root2, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s deleted in the source is back in the copy (%v)", gone, err)
		}
	}
}

func setUserXattr(p string) error { return unix.Setxattr(p, "user.e2b.k", []byte("v"), 0) }

func hasUserXattr(p string) bool {
	buf := make([]byte, 8)
	n, err := unix.Getxattr(p, "user.e2b.k", buf)
	return err == nil && string(buf[:n]) == "v"
}

func ownerOf(st os.FileInfo) uint32 { return st.Sys().(*syscall.Stat_t).Uid }

// deepTree makes under dir a file whose path is longer than PATH_MAX (a
// sandbox may nest directories as deep as it likes, relatively).
func deepTree(t *testing.T, dir string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	must(t, err)
	name := strings.Repeat("d", 250)
	for range 24 {
		must(t, unix.Mkdirat(fd, name, 0o755))
		next, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		must(t, err)
		unix.Close(fd)
		fd = next
	}
	f, err := unix.Openat(fd, "f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	must(t, err)
	unix.Close(f)
	unix.Close(fd)
}

// TestCopyErrorNamesNoHostPath: when a copy of a sandbox's files fails (a
// tree deeper than cp(1) can name), the error names the sandbox's paths,
// not the host's source or destination (a build step's failure is shown to
// its tenant), and is bounded. Before, it held both host paths and cp's
// whole output.
func TestCopyErrorNamesNoHostPath(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	deepTree(t, src)
	err := copyTree(context.Background(), src, dst)
	if err == nil {
		t.Skip("cp copied a tree deeper than PATH_MAX")
	}
	msg := err.Error()
	if strings.Contains(msg, src) || strings.Contains(msg, dst) || len(msg) > maxCopyOutput+100 {
		t.Fatalf("error names a host path or is unbounded (%d bytes): %.300s", len(msg), msg)
	}
	if !strings.Contains(msg, "/"+strings.Repeat("d", 250)) {
		t.Fatalf("error does not name the sandbox's path: %.300s", msg)
	}
}
