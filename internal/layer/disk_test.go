package layer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func needDisk(t testing.TB) {
	t.Helper()
	needRoot(t)
	if err := DiskSupported(); err != nil {
		t.Skip(err)
	}
}

// prepareDisk prepares a disk-backed layer whose image is in a fresh
// directory; the test's end checks that the layer, its image and its loop
// device are gone.
func prepareDisk(t *testing.T, opts Options) *Layer {
	t.Helper()
	dir := newDir(t)
	opts.Image = filepath.Join(t.TempDir(), "sbx1.img")
	t.Cleanup(func() {
		must(t, Cleanup(dir))
		must(t, RemoveImage(opts.Image))
		assertNoLoop(t, opts.Image)
	})
	l, err := Prepare(dir, newLower(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// assertNoLoop checks that no loop device is bound to image (they clear
// themselves asynchronously after the unmount: wait a little).
func assertNoLoop(t testing.TB, image string) {
	t.Helper()
	var held []string
	for range 100 {
		if held = loopsOf(image); len(held) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("loop devices still bound to %s: %v", image, held)
}

// loopsOf lists the loop devices whose backing file is image (deleted or not).
func loopsOf(image string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), image) {
			out = append(out, f)
		}
	}
	return out
}

func TestDiskLayer(t *testing.T) {
	needDisk(t)
	l := prepareDisk(t, Options{DiskBytes: 64 << 20, OwnerUID: 100000, OwnerGID: 100000})
	var fs unix.Statfs_t
	must(t, unix.Statfs(l.Upper, &fs))
	if fs.Type != unix.EXT4_SUPER_MAGIC || fs.Flags&unix.ST_NODEV == 0 || fs.Flags&unix.ST_NOSUID == 0 {
		t.Errorf("upper on fs %#x flags %#x, want ext4 nodev nosuid", fs.Type, fs.Flags)
	}
	// The sandbox sees its quota as the size of its disk.
	must(t, unix.Statfs(l.Rootfs, &fs))
	if size := int64(fs.Blocks) * fs.Bsize; size < 64<<20 || size > 80<<20 {
		t.Errorf("rootfs size %d MiB, want about 64", size>>20)
	}
	must(t, os.WriteFile(filepath.Join(l.Rootfs, "new.txt"), []byte("new"), 0o644))
	if b, err := os.ReadFile(filepath.Join(l.Upper, "new.txt")); err != nil || string(b) != "new" {
		t.Fatalf("upper: %q %v", b, err)
	}
	var st unix.Stat_t
	must(t, unix.Stat(l.Rootfs, &st))
	if st.Uid != 100000 || st.Gid != 100000 {
		t.Errorf("root owned by %d:%d", st.Uid, st.Gid)
	}
	must(t, unix.Stat(filepath.Dir(l.Upper), &st))
	if st.Mode&0o7777 != 0o700 || st.Uid != 0 {
		t.Errorf("image root %o %d", st.Mode&0o7777, st.Uid)
	}
}

// TestDiskQuota: the image holds the quota of file data and of inodes, not
// more: past either, writes fail with ENOSPC (for root too), and deleting
// gives the room back.
func TestDiskQuota(t *testing.T) {
	needDisk(t)
	const mib = 1 << 20
	for _, tc := range []struct {
		name      string
		opts      Options
		fits, not func(root string) error
	}{
		{"bytes", Options{DiskBytes: 32 * mib}, writeMiB("a", 31), writeMiB("b", 2)},
		{"inodes", Options{DiskBytes: 32 * mib, Inodes: 128}, touch("a", 100), touch("b", 100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := prepareDisk(t, tc.opts)
			if err := tc.fits(l.Rootfs); err != nil {
				t.Fatalf("within the quota: %v", err)
			}
			if err := tc.not(l.Rootfs); !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("past the quota = %v, want ENOSPC", err)
			}
			must(t, os.RemoveAll(filepath.Join(l.Rootfs, "a")))
			must(t, os.RemoveAll(filepath.Join(l.Rootfs, "b")))
			if err := tc.fits(l.Rootfs); err != nil {
				t.Fatalf("after deleting: %v", err)
			}
		})
	}
}

// writeMiB writes n MiB to root/name, synced.
func writeMiB(name string, n int) func(string) error {
	return func(root string) error {
		f, err := os.Create(filepath.Join(root, name))
		if err != nil {
			return err
		}
		defer f.Close()
		for range n {
			if _, err := f.Write(make([]byte, 1<<20)); err != nil {
				return err
			}
		}
		return f.Sync()
	}
}

// touch creates n empty files in the directory root/name.
func touch(name string, n int) func(string) error {
	return func(root string) error {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestDiskPrepareFails: a failure after the image is made (here a seed
// that cannot be copied) leaves no mount, loop device, image or directory;
// an image larger than the host's free space is refused before it is made.
func TestDiskPrepareFails(t *testing.T) {
	needDisk(t)
	for _, tc := range []struct {
		name string
		opts Options
		want error
	}{
		{"seed", Options{DiskBytes: 16 << 20, OwnerUID: 100000, Seed: "/nonexistent-seed"}, nil},
		{"host-full", Options{DiskBytes: 1 << 60, OwnerUID: 100000}, unix.ENOSPC}, // ErrHostFull: 507
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newDir(t)
			tc.opts.Image = filepath.Join(t.TempDir(), "sbx1.img")
			_, err := Prepare(dir, newLower(t), tc.opts)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Prepare = %v, want an error (%v)", err, tc.want)
			}
			assertGone(t, dir)
			if _, err := os.Lstat(tc.opts.Image); !os.IsNotExist(err) {
				t.Errorf("image left behind (%v)", err)
			}
			assertNoLoop(t, tc.opts.Image)
		})
	}
}

// TestUseImagesNotInMemory: images on a tmpfs would be memory again.
func TestUseImagesNotInMemory(t *testing.T) {
	needDisk(t)
	dir := t.TempDir()
	must(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	s := &Store{Dir: t.TempDir()}
	if err := s.UseImages(filepath.Join(dir, "images")); err == nil || s.Images != "" {
		t.Fatalf("UseImages on a tmpfs = %v (Images %q), want an error", err, s.Images)
	}
}

// TestStoreImages: with Images set, user-namespaced layers get an image
// and gVisor's stay tmpfs; List finds an image without its directory (a
// crash's leftover) and Remove reaps both.
func TestStoreImages(t *testing.T) {
	needDisk(t)
	s, err := New(filepath.Join(t.TempDir(), "sandboxes"))
	must(t, err)
	if mem, _ := onMemory(os.TempDir()); mem {
		t.Skip("the temp dir is a tmpfs: no images there")
	}
	must(t, s.UseImages(filepath.Join(t.TempDir(), "images")))
	ctx := context.Background()
	upperFS := func(id string, owner uint32) int64 {
		t.Helper()
		t.Cleanup(func() { must(t, s.Remove(id)) })
		rootfs, err := s.Prepare(ctx, id, newLower(t), 16<<20, owner)
		if err != nil {
			t.Fatal(err)
		}
		var fs unix.Statfs_t
		must(t, unix.Statfs(filepath.Join(filepath.Dir(rootfs), "layer"), &fs))
		return fs.Type
	}
	for id, owner := range map[string]uint32{"userns": 100000, "gvisor": 0} {
		if got, want := upperFS(id, owner), map[bool]int64{true: unix.TMPFS_MAGIC, false: unix.EXT4_SUPER_MAGIC}[owner == 0]; got != want {
			t.Errorf("%s: upper fs %#x, want %#x", id, got, want)
		}
	}
	// Images turned off (no --disk-layers): new layers are tmpfs, the
	// images made before are still listed and removed with their layers.
	s.ReapImagesOnly = true
	if got := upperFS("off", 100000); got != unix.TMPFS_MAGIC {
		t.Errorf("a userns layer with images off: upper fs %#x, want tmpfs", got)
	}
	must(t, os.WriteFile(filepath.Join(s.Images, "orphan.img"), nil, 0o600))
	if ids, _ := s.List(); len(ids) != 4 {
		t.Fatalf("List = %v, want userns, gvisor, off, orphan", ids)
	}
	img := s.imagePath("userns")
	for _, id := range []string{"userns", "gvisor", "off", "orphan"} {
		must(t, s.Remove(id))
	}
	if ents, _ := os.ReadDir(s.Images); len(ents) != 0 {
		t.Errorf("images left: %v", ents)
	}
	if ids, _ := s.List(); len(ids) != 0 {
		t.Errorf("List after Remove = %v", ids)
	}
	assertNoLoop(t, img)
}

// BenchmarkPrepareRemoveDisk is BenchmarkPrepareRemove for a disk layer
// of 1 GiB: image, mkfs, loop device, mounts, then teardown.
func BenchmarkPrepareRemoveDisk(b *testing.B) {
	needDisk(b)
	lower, parent, images := newLower(b), b.TempDir(), b.TempDir()
	for i := 0; b.Loop(); i++ {
		img := filepath.Join(images, "l.img")
		l, err := Prepare(filepath.Join(parent, "l"), lower, Options{DiskBytes: 1 << 30, Image: img, OwnerUID: 100000})
		if err != nil {
			b.Fatal(err)
		}
		if err := errors.Join(l.Remove(), RemoveImage(img)); err != nil {
			b.Fatal(err)
		}
	}
}
