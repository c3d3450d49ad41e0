package layer

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// countTableReads counts the reads of the mount table until the test ends.
func countTableReads(t *testing.T) *atomic.Int32 {
	var n atomic.Int32
	orig := readMountTable
	readMountTable = func() ([]byte, error) { n.Add(1); return orig() }
	t.Cleanup(func() { readMountTable = orig })
	return &n
}

// TestRemoveReadsNoMountTable: removing a layer (its overlay busy, or not)
// costs no read of the mount table, whose size grows with the host's
// sandboxes.
func TestRemoveReadsNoMountTable(t *testing.T) {
	needRoot(t)
	for _, busy := range []bool{false, true} {
		dir := newDir(t)
		l, err := Prepare(dir, newLower(t), Options{DiskBytes: 1 << 20})
		must(t, err)
		if busy {
			f, err := os.Open(filepath.Join(l.Rootfs, "base.txt"))
			must(t, err)
			defer f.Close()
		}
		reads := countTableReads(t)
		must(t, l.Remove())
		if n := reads.Load(); n != 0 {
			t.Errorf("busy=%v: %d reads of the mount table", busy, n)
		}
		assertGone(t, dir)
	}
}

// TestRemoveUnmountsOtherMounts: a mount a layer does not make (a bind of
// a directory outside it, on a path of its own) is found, unmounted and not
// deleted through.
func TestRemoveUnmountsOtherMounts(t *testing.T) {
	needRoot(t)
	for _, at := range []string{"extra", "layer/upper/x"} {
		dir := newDir(t)
		l, err := Prepare(dir, newLower(t), Options{DiskBytes: 1 << 20})
		must(t, err)
		outside := t.TempDir()
		keep := filepath.Join(outside, "keep")
		must(t, os.WriteFile(keep, []byte("k"), 0o644))
		p := filepath.Join(dir, at)
		must(t, os.MkdirAll(p, 0o755))
		must(t, unix.Mount(outside, p, "", unix.MS_BIND, ""))
		must(t, l.Remove())
		assertGone(t, dir)
		if _, err := os.Stat(keep); err != nil {
			t.Fatalf("%s: deleted through the mount: %v", at, err)
		}
	}
}
