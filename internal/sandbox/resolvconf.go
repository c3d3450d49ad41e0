package sandbox

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// writeResolvConf points the sandbox's /etc/resolv.conf at its gateway, where
// the daemon's DNS filter answers (udp/tcp 53 to it are redirected there).
// The template's file is replaced in the writable layer, never followed:
// /etc must be a real directory of the rootfs and a symlink at
// /etc/resolv.conf is removed, not written through (a hostile template must
// not make the daemon write outside the rootfs). No gateway: nothing to do.
func writeResolvConf(rootfs string, gw netip.Addr) error {
	if !gw.IsValid() {
		return nil
	}
	root, err := unix.Open(rootfs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("resolv.conf: open %s: %w", rootfs, err)
	}
	defer unix.Close(root)
	etc, err := unix.Openat2(root, "etc", &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH,
	})
	if err != nil {
		return fmt.Errorf("resolv.conf: open %s/etc: %w", rootfs, err)
	}
	defer unix.Close(etc)
	if err := unix.Unlinkat(etc, "resolv.conf", 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("resolv.conf: remove template's: %w", err)
	}
	fd, err := unix.Openat(etc, "resolv.conf", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("resolv.conf: create: %w", err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("nameserver "+gw.String()+"\noptions edns0\n")); err != nil {
		return fmt.Errorf("resolv.conf: write: %w", err)
	}
	return nil
}
