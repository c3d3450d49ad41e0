package layer

import (
	"context"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// overlayOptions are fixed overlay settings: the lower layer is a trusted
// template, so redirect_dir=on lets a sandbox rename a template directory
// (instead of EXDEV); index and xino stay off (no hardlink index to keep
// consistent across template rebuilds, no inode-number games).
const overlayOptions = "redirect_dir=on,index=off,xino=off"

// Prepare creates dir (its parent must exist; dir must not), mounts a tmpfs
// of opts.DiskBytes (or the ext4 image opts.Image) at dir/layer and an
// overlay of lower under it at dir/rootfs, and returns the layer. lower is
// only read. On error nothing is left mounted, and dir and the image are
// removed.
func Prepare(dir, lower string, opts Options) (l *Layer, err error) {
	opts = opts.withDefaults()
	if dir, err = realPath(dir); err != nil {
		return nil, fmt.Errorf("prepare layer: %w", err)
	}
	if lower, err = checkLower(lower); err != nil {
		return nil, fmt.Errorf("prepare layer %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o710); err != nil {
		return nil, fmt.Errorf("prepare layer: %w", err) // EEXIST: not ours to clean
	}
	l = paths(dir)
	defer func() {
		if err != nil {
			_ = Cleanup(dir)
			_ = RemoveImage(opts.Image)
			err = fmt.Errorf("prepare layer %s: %w", dir, err)
		}
	}()
	if err := fence(dir, opts); err != nil {
		return nil, err
	}
	if err := l.mountUpperFS(opts); err != nil {
		return nil, err
	}
	if err := l.mountOverlay(lower, opts); err != nil {
		return nil, err
	}
	return l, nil
}

// fence makes dir (0710, before anything is in it) reachable only by host
// root and the group of the sandbox's root (its host gid: a user-namespaced
// runtime sets its rootfs up as that id; 0 under gVisor, so root only). The
// tree holds what sandbox root wrote — setuid binaries included (sudo is
// allowed inside), owned by host root under gVisor — and the overlay must
// honour setuid bits for user-namespaced runtimes, so no host user may
// reach it.
func fence(dir string, opts Options) error {
	if err := os.Chown(dir, 0, int(opts.OwnerGID)); err != nil {
		return err
	}
	return os.Chmod(dir, 0o710)
}

// maxLowerOption bounds the lowerdir option: the whole overlay option
// string must fit in one page.
const maxLowerOption = 3500

// checkLower resolves lower — one directory, or several joined by ':' with
// the topmost first, as overlayfs stacks them — and checks that each is a
// usable directory.
func checkLower(lower string) (string, error) {
	parts := strings.Split(lower, ":")
	for i, p := range parts {
		real, err := realPath(p)
		if err != nil {
			return "", err
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			return "", fmt.Errorf("lower %s: not a directory (%v)", p, err)
		}
		if err := checkOptionPath(real); err != nil {
			return "", err
		}
		parts[i] = real
	}
	out := strings.Join(parts, ":")
	if len(out) > maxLowerOption {
		return "", fmt.Errorf("lower: %d layers do not fit in an overlay mount option (%d bytes)", len(parts), len(out))
	}
	return out, nil
}

// mountUpperFS mounts what holds upper and work: the image if opts names
// one, else a tmpfs.
func (l *Layer) mountUpperFS(opts Options) error {
	if opts.Image != "" {
		return l.mountDisk(opts)
	}
	return l.mountTmpfs(opts)
}

func (l *Layer) mountTmpfs(opts Options) error {
	if err := os.Mkdir(l.tmpfs(), 0o700); err != nil {
		return err
	}
	data := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", opts.DiskBytes, opts.Inodes)
	if err := unix.Mount("tmpfs", l.tmpfs(), "tmpfs", unix.MS_NODEV|unix.MS_NOSUID, data); err != nil {
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	return nil
}

// mountOverlay makes upper (owned like opts says, with the mode of lower's
// root) and work, then mounts the overlay at l.Rootfs.
func (l *Layer) mountOverlay(lower string, opts Options) error {
	top, _, _ := strings.Cut(lower, ":")
	st, err := os.Stat(top)
	if err != nil {
		return err
	}
	if err := os.Mkdir(l.Upper, st.Mode().Perm()); err != nil {
		return err
	}
	if err := os.Chown(l.Upper, int(opts.OwnerUID), int(opts.OwnerGID)); err != nil {
		return err
	}
	if err := os.Chmod(l.Upper, st.Mode().Perm()); err != nil {
		return err
	}
	if err := l.seed(opts); err != nil {
		return err
	}
	if err := os.Mkdir(l.work(), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(l.Rootfs, 0o755); err != nil {
		return err
	}
	if err := checkOptionPath(l.Dir); err != nil {
		return err
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,%s", lower, l.Upper, l.work(), overlayOptions)
	if err := unix.Mount("overlay", l.Rootfs, "overlay", overlayFlags(opts), data); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	return nil
}

// overlayFlags: nodev always; nosuid where sandbox root is host root
// (gVisor, whose Sentry applies setuid bits from the files' modes itself):
// a setuid-root file that code in the sandbox made is then inert on the
// host even for host root's own processes.
func overlayFlags(opts Options) uintptr {
	if opts.OwnerUID == 0 {
		return unix.MS_NODEV | unix.MS_NOSUID
	}
	return unix.MS_NODEV
}

// seed copies opts.Seed into the (not yet mounted) upper layer.
func (l *Layer) seed(opts Options) error {
	if opts.Seed == "" {
		return nil
	}
	ctx := opts.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return copyTree(ctx, opts.Seed, l.Upper)
}
