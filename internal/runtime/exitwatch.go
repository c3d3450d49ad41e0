package runtime

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// NotifyExit calls fn once, from a goroutine of its own, when host process
// pid has ended (exited or become a zombie: the kernel's pidfd readiness,
// which holds once the last thread of the process is gone). It costs one
// descriptor and one goroutine parked in the runtime's network poller until
// then: no thread, no timer, no CPU while the process lives. The pidfd
// names the process itself, so a pid reused after the exit is never
// mistaken for it.
//
// A pid that is already gone gets fn at once. stop ends the watch (fn is
// then not called, unless it already was); it is safe to call more than
// once. An error means the kernel has no pidfd_open (Linux < 5.3) or no
// descriptor was free: the caller must find the exit some other way
// (ProcessAlive).
func NotifyExit(pid int, fn func()) (stop func(), err error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err == unix.ESRCH {
		go fn()
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	// NewFile registers a non-blocking descriptor with the poller.
	f := os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid))
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pidfd %d: %w", pid, err)
	}
	go func() {
		defer f.Close()
		// Read returns once the callback reports the descriptor readable
		// (between calls it waits in the poller), or with an error once
		// stop closed it.
		if rc.Read(func(fd uintptr) bool { return pidfdReady(int(fd)) }) == nil {
			fn()
		}
	}()
	return func() { _ = f.Close() }, nil
}

// pidfdReady reports whether pidfd fd says its process has ended (any
// error counts as ended: the watch must not wait forever on a broken fd).
func pidfdReady(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	if err == unix.EINTR {
		return false
	}
	return err != nil || n > 0
}
