package network

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// prepareNetNSDir makes dir a mount point of itself with shared propagation,
// as iproute2 does before its first `ip netns add`. Were dir left a plain
// directory, the next `ip netns add` by anyone on the host would bind-mount
// it over itself: every netns file made before would then sit under that
// mount, and its teardown would fail with EBUSY forever (a leaked netns).
func prepareNetNSDir(dir string) error {
	err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) { // EINVAL: not a mount point yet
		return fmt.Errorf("network: make %s shared: %w", dir, err)
	}
	if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("network: bind %s onto itself: %w", dir, err)
	}
	if err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("network: make %s shared: %w", dir, err)
	}
	return nil
}
