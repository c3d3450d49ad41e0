package layer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// blockSize is the block size of a disk layer's file system and of its
// loop device.
const blockSize = 4096

// inodeSize is the on-disk inode size of a disk layer (ext4's default:
// room for nanosecond times past 2038 and small xattrs).
const inodeSize = 256

// diskOverhead is what ext4 keeps for itself in an image beyond the inode
// tables: the allocator's reserve (2% up to 16 MiB), bitmaps (2 blocks per
// 128 MiB), group descriptors and the root directory. Measured: the room
// left for files is then the quota to within half a MiB.
func diskOverhead(diskBytes int64) int64 {
	return min(diskBytes/50, 16<<20) + diskBytes/4096 + 512<<10
}

// imageSize is the size of the image that lets a sandbox write diskBytes of
// file data and create inodes files: the quota plus ext4's own metadata.
func imageSize(o Options) int64 {
	n := o.DiskBytes + int64(o.Inodes)*inodeSize + diskOverhead(o.DiskBytes)
	return (n + blockSize - 1) / blockSize * blockSize
}

// DiskSupported reports why disk layers cannot work on this host (nil when
// they can): mkfs.ext4 (e2fsprogs) on PATH and loop devices.
func DiskSupported() error {
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return fmt.Errorf("disk layers need loop devices: %w", err)
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		return fmt.Errorf("disk layers need mkfs.ext4 (e2fsprogs): %w", err)
	}
	return nil
}

// onMemory reports whether dir is on a file system in memory (tmpfs,
// ramfs), where an image would put the files back in memory.
func onMemory(dir string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, err
	}
	return st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC, nil
}

// makeImage creates opts.Image (which must not exist) as a sparse file of
// imageSize holding an ext4 file system with exactly opts.Inodes inodes
// (golden.go): the image's size is the byte quota, its inode count the
// file quota. The host space is not reserved: an image takes what is
// written into it.
func makeImage(ctx context.Context, opts Options) (err error) {
	size := imageSize(opts)
	if err := checkHostSpace(opts.Image, size); err != nil {
		return err
	}
	extents, err := goldenFor(ctx, opts)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(opts.Image, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return writeExtents(f, extents)
}

// mkfs makes the file system of a layer image: no journal (a layer does
// not outlive a host crash: recovery reaps it), no root reserve (a full
// layer is full for root too), no room to grow, inode tables left sparse (a
// fresh sparse file reads as zeros; mount with noinit_itable).
func mkfs(ctx context.Context, image string, inodes uint64) error {
	out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-b", strconv.Itoa(blockSize), "-I", strconv.Itoa(inodeSize),
		"-N", strconv.FormatUint(inodes, 10), "-m", "0", "-O", "^has_journal,^resize_inode",
		"-E", "lazy_itable_init=1,nodiscard,root_owner=0:0", "-L", "sbx-layer", image).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ErrHostFull is returned (wrapped) when the host file system holding the
// images has less space free than a new layer's quota. It wraps ENOSPC
// (the API answers 507).
var ErrHostFull = fmt.Errorf("not enough free space on the host for the sandbox's disk: %w", unix.ENOSPC)

// checkHostSpace refuses an image larger than the space free on the file
// system that would hold it: one sandbox can never be promised more than
// the host has now. (Images are sparse: the sum of the quotas may exceed
// the host's space, as tmpfs quotas could exceed memory.)
func checkHostSpace(image string, size int64) error {
	var st unix.Statfs_t
	dir := image[:strings.LastIndexByte(image, '/')+1]
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("host space: %w", err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < size {
		return fmt.Errorf("%w: %d MiB free, %d MiB needed", ErrHostFull, free>>20, size>>20)
	}
	return nil
}

// mountDisk makes the layer's image, attaches it to a loop device and
// mounts it at the layer's tmpfs path (nodev, nosuid; discard, so that what
// the sandbox deletes is freed in the sparse image on the host). The root
// of the file system is mode 0700 like the tmpfs's.
func (l *Layer) mountDisk(opts Options) error {
	ctx := opts.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if err := os.Mkdir(l.tmpfs(), 0o700); err != nil {
		return err
	}
	if err := makeImage(ctx, opts); err != nil {
		return err
	}
	dev, err := attachLoop(opts.Image)
	if err != nil {
		return err
	}
	defer dev.Close() // the mount holds the device from here on
	if err := unix.Mount(dev.Name(), l.tmpfs(), "ext4", unix.MS_NODEV|unix.MS_NOSUID|unix.MS_NOATIME, "noinit_itable,discard"); err != nil {
		return fmt.Errorf("mount %s: %w", opts.Image, err)
	}
	if err := os.Remove(l.tmpfs() + "/lost+found"); err != nil {
		return err
	}
	return os.Chmod(l.tmpfs(), 0o700)
}

// RemoveImage deletes a layer's image once the layer is unmounted (its
// loop device then clears itself). An empty or missing image is not an
// error.
func RemoveImage(image string) error {
	if image == "" {
		return nil
	}
	if err := os.Remove(image); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove layer image: %w", err)
	}
	return nil
}

// ext4 shutdown ioctl (EXT4_IOC_SHUTDOWN, _IOR('X', 125, __u32)) and its
// flag that skips flushing anything (EXT4_GOING_FLAGS_NOLOGFLUSH).
const (
	ext4IocShutdown  = 0x8004587d
	ext4GoingNoFlush = 2
)

// shutdownDisk stops the disk layer mounted at dir from writing anything
// more (every further operation on it fails with EIO), so that unmounting
// it syncs nothing: its image is deleted next. Not a disk layer, or gone
// already, is not an error.
func shutdownDisk(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil || st.Type != unix.EXT4_SUPER_MAGIC || !isMountPoint(dir) {
		return
	}
	flags := uint32(ext4GoingNoFlush)
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ext4IocShutdown, uintptr(unsafe.Pointer(&flags)))
}
