package layer

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// loopTries bounds the race for a free loop device: LOOP_CTL_GET_FREE
// names one, and another process (a concurrent create) may configure it
// first (EBUSY).
const loopTries = 32

// attachLoop binds image to a free loop device and returns the device,
// open. The device clears itself (LO_FLAGS_AUTOCLEAR) when its last user
// lets go: close it after mounting it, and unmounting releases it; close
// it without mounting, and it is released at once. I/O is buffered: the
// image's pages are cached on the host too (a create waits for no disk
// write-back; Remove shuts the file system down so nothing is flushed).
func attachLoop(image string) (*os.File, error) {
	backing, err := os.OpenFile(image, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer backing.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(backing.Fd()), Size: blockSize}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	for range loopTries {
		dev, err := configureFree(ctl, &cfg)
		if !errors.Is(err, unix.EBUSY) {
			return dev, err
		}
	}
	return nil, fmt.Errorf("attach loop device: no free one after %d tries", loopTries)
}

// configureFree asks ctl for a free loop device and configures it.
func configureFree(ctl *os.File, cfg *unix.LoopConfig) (*os.File, error) {
	n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
	if err != nil {
		return nil, fmt.Errorf("loop-control: %w", err)
	}
	dev, err := os.OpenFile(fmt.Sprintf("/dev/loop%d", n), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlLoopConfigure(int(dev.Fd()), cfg); err != nil {
		dev.Close()
		return nil, fmt.Errorf("configure %s: %w", dev.Name(), err)
	}
	return dev, nil
}
