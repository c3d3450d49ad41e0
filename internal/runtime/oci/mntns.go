package oci

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/osthread"
)

// crun refuses hybrid cgroup hosts (v1 controllers plus a cgroup2 mount at
// /sys/fs/cgroup/unified). On such hosts every crun command starts in a
// fresh private mount namespace, a slave of the host's, in which that
// cgroup2 mount is lazily unmounted — what `unshare --mount --propagation
// slave sh -c 'umount -l ...; exec crun ...'` would do, without the three
// execs and libmount's parse of the mount table, which cost more CPU than
// crun's own work during a burst of creates.
//
// The namespace is made on one OS thread that the starter goroutine keeps
// locked for the life of the process (never the main thread, whose view
// /proc/self shows); a child forked from that thread inherits the thread's
// mount namespace. The Go runtime never makes its new threads from a locked
// one (it uses its template thread), so nothing else ends up in these
// namespaces.

// nsStarter starts commands from its locked thread. Requests are served one
// at a time; a start is a fork and an exec.
type nsStarter struct {
	reqs chan nsReq
}

type nsReq struct {
	cmd  *exec.Cmd
	done chan error
}

// hybridStarter is the process's one starter, made on first use.
var hybridStarter = sync.OnceValues(newNSStarter)

func newNSStarter() (*nsStarter, error) {
	s := &nsStarter{reqs: make(chan nsReq)}
	ready := make(chan error)
	osthread.Go(func() { s.loop(ready) })
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("private mount namespace for crun: %w", err)
	}
	return s, nil
}

// loop owns its locked thread (osthread.Go): if loop returns, the thread
// exits instead of going back to the Go scheduler.
func (s *nsStarter) loop(ready chan<- error) {
	host, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		// A private fs_struct for this thread: setns(CLONE_NEWNS) needs it.
		err = unix.Unshare(unix.CLONE_FS)
	}
	if err == nil {
		err = enterPrivateNS(host)
	}
	ready <- err
	if err != nil {
		return
	}
	for req := range s.reqs {
		err := enterPrivateNS(host)
		if err == nil {
			err = req.cmd.Start()
		}
		req.done <- err
	}
}

// enterPrivateNS moves the calling (locked) thread into a new mount
// namespace copied from host's, a slave of it, without the cgroup2 mount.
func enterPrivateNS(host int) error {
	if err := unix.Setns(host, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("setns host: %w", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave: %w", err)
	}
	err := unix.Unmount(cgroupRoot+"/unified", unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s/unified: %w", cgroupRoot, err)
	}
	return nil
}

// start starts cmd from the locked thread (cmd.Start's contract otherwise),
// giving up when ctx ends first; a start that completes after that is
// killed and reaped behind the caller's back.
func (s *nsStarter) start(ctx context.Context, cmd *exec.Cmd) error {
	done := make(chan error, 1)
	select {
	case s.reqs <- nsReq{cmd, done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		}()
		return ctx.Err()
	}
}
