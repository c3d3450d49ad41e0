package volume

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveDeepTreeBoundedDescriptors: removing a tree deeper than the
// process's descriptor limit succeeds (a tenant's sandbox can nest
// directories as deep as its volume's quota lets it). Before, the delete
// held a descriptor per level: under a limit of 256 a tree 1,000 deep
// failed with EMFILE, and a few such deletes at once could take the daemon
// to its limit, for every tenant.
func TestRemoveDeepTreeBoundedDescriptors(t *testing.T) {
	r, vol, secret := newRoot(t)
	const depth = 1000
	mkdeep(t, filepath.Join(vol, "deep"), depth)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	err := r.Remove("/deep")
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("Remove of a tree %d deep under 256 descriptors: %v", depth, err)
	}
	if _, err := os.Lstat(filepath.Join(vol, "deep")); !os.IsNotExist(err) {
		t.Errorf("tree still there: %v", err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("the file beside the volume: %v", err)
	}
}

// mkdeep makes dir, depth directories nested under it (relative: deeper
// than PATH_MAX), each holding a file and a symlink out of the volume.
func mkdeep(t *testing.T, dir string, depth int) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < depth; i++ {
		f, err := unix.Openat(fd, "f", unix.O_CREAT|unix.O_WRONLY, 0o644)
		if err == nil {
			unix.Close(f)
			err = unix.Symlinkat("../../../../../../../../..", fd, "up")
		}
		if err == nil {
			err = unix.Mkdirat(fd, "d", 0o755)
		}
		next := -1
		if err == nil {
			next, err = unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		}
		unix.Close(fd)
		if err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		fd = next
	}
	unix.Close(fd)
}

// TestRemoveNeverClimbsOut: climbing back from a directory whose parent is
// not the one it came down from (the tree moved meanwhile) fails, so a
// delete never goes on above its tree.
func TestRemoveNeverClimbsOut(t *testing.T) {
	_, vol, _ := newRoot(t)
	if err := os.MkdirAll(filepath.Join(vol, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	top, err := os.Open(vol)
	if err != nil {
		t.Fatal(err)
	}
	defer top.Close()
	a, aID, err := openDir(int(top.Fd()), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _, err := openDir(int(a.Fd()), "b")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if p, err := climb(b, aID); err != nil {
		t.Fatalf("climb to its own parent: %v", err)
	} else {
		p.Close()
	}
	if err := os.Rename(filepath.Join(vol, "a", "b"), filepath.Join(vol, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := climb(b, aID); !errors.Is(err, errMoved) {
		t.Errorf("climb after the move = %v, want errMoved", err)
	}
}
