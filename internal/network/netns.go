package network

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/osthread"
)

// newNamedNS creates a network namespace bind-mounted at path, with IPv6
// disabled in it, and returns a handle to it. The namespace is made on a
// throwaway OS thread, so no goroutine of the caller changes namespace.
// On error nothing is left at path.
func newNamedNS(path string) (netns.NsHandle, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return -1, fmt.Errorf("netns file: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	// The thread is never unlocked: it dies in the new netns.
	osthread.Go(func() { errc <- unshareAndMount(path) })
	if err := <-errc; err != nil {
		removeNS(path)
		return -1, err
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		removeNS(path)
		return -1, fmt.Errorf("open netns: %w", err)
	}
	return ns, nil
}

// unshareAndMount moves the calling (locked) thread to a new netns, disables
// IPv6 there (before any link exists, so none ever gets a v6 address) and
// bind-mounts the netns at path.
func unshareAndMount(path string) error {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("unshare netns: %w", err)
	}
	for _, k := range []string{"all", "default", "lo"} {
		if err := sysctl("ipv6/conf/"+k+"/disable_ipv6", "1"); err != nil {
			return err
		}
	}
	if err := unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind netns to %s: %w", path, err)
	}
	return nil
}

// removeNS unmounts and removes the netns file at path; a missing mount or
// file is not an error. The namespace itself goes when its last user does.
func removeNS(path string) error {
	var errs []error
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("unmount %s: %w", path, err))
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove netns file: %w", err))
	}
	return errors.Join(errs...)
}

// inNS runs fn on an OS thread switched into ns. The thread is restored
// after, or discarded if it cannot be.
func inNS(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		err = fn()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// sysctl writes value to /proc/sys/net/<key> in the calling thread's netns.
func sysctl(key, value string) error {
	if err := os.WriteFile("/proc/sys/net/"+key, []byte(value), 0); err != nil {
		return fmt.Errorf("sysctl net/%s: %w", key, err)
	}
	return nil
}
