package layer

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkRemove prepares and removes a layer on a host with 300 more
// mounts (a node with ≈ 100 live sandboxes): by the mount table (Cleanup,
// what Remove did before) and by statx (Remove).
//
//	go test ./internal/layer -run XXX -bench Remove -benchtime 200x
func BenchmarkRemove(b *testing.B) {
	needRoot(b)
	others := b.TempDir()
	for i := range 300 {
		p := filepath.Join(others, strconv.Itoa(i))
		must(b, os.Mkdir(p, 0o755))
		must(b, unix.Mount("tmpfs", p, "tmpfs", 0, "size=4k"))
		b.Cleanup(func() { _ = unix.Unmount(p, unix.MNT_DETACH) })
	}
	lower := newLower(b)
	for _, tc := range []struct {
		name   string
		remove func(*Layer) error
	}{{"mounttable", func(l *Layer) error { return Cleanup(l.Dir) }}, {"statx", (*Layer).Remove}} {
		b.Run(tc.name, func(b *testing.B) {
			var cpu time.Duration // the process's, kernel included
			for range b.N {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "l")
				l, err := Prepare(dir, lower, Options{DiskBytes: 1 << 20})
				must(b, err)
				c0 := processCPU()
				b.StartTimer()
				must(b, tc.remove(l))
				cpu += processCPU() - c0
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPU is the process's user and system CPU so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
