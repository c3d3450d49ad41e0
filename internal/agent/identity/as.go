package identity

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// UserUmask is the umask file operations run with for a user other than
// the agent's own (Debian's login default).
const UserUmask = 0o022

// As runs fn with u's credentials for everything the kernel checks about
// files: every path fn resolves and every file it opens, creates, renames,
// removes or watches is checked as it would be for u, so a symlink or hard
// link u planted cannot make the agent act as root. When u is the agent's
// own user (root, for the sandbox's agent), fn runs directly.
//
// Otherwise fn runs on a goroutine locked to an OS thread (never the
// process's main thread, whose ids /proc/self shows) that unshares its
// filesystem context (CLONE_FS: the umask it sets is its own), sets umask
// UserUmask, u's supplementary groups and effective gid, then u's effective
// uid, with raw per-thread system calls (syscall.Setresuid would change
// every thread of the process). The effective uid leaving 0 clears the
// thread's effective capabilities and makes its fsuid u's; the real and
// saved uid stay root's, so processes of u cannot signal the agent through
// that thread and the thread can take root back. When fn returns, the
// thread gets root's ids, groups and umask back and returns to the
// scheduler; if anything fails (or fn panics) it is never unlocked and the
// runtime ends it, so no other goroutine ever runs with u's credentials.
// Threads are reused rather than created per call: a fork bomb that fills
// the pids limit must not leave the runtime needing a new thread.
//
// The agent never changes its own cwd, root or umask after start, so a
// thread's private copy of them stays equal to the process's.
//
// Descriptors fn opens stay usable after As returns (access is checked when
// a file is opened). fn must do its work on the calling goroutine
// (goroutines it starts run as the agent) and must not use access(2),
// which checks the real uid. A panic in fn is returned as an error.
func As(u User, fn func() error) error {
	if u.UID == uint32(os.Geteuid()) && u.GID == uint32(os.Getegid()) {
		return fn()
	}
	done := make(chan error, 1)
	go asThread(u, fn, done)
	return <-done
}

// asThread is As's goroutine: it runs fn as u on its locked thread and
// sends the result to done.
func asThread(u User, fn func() error, done chan<- error) {
	runtime.LockOSThread()
	if syscall.Gettid() == syscall.Getpid() {
		// The main thread. While this goroutine holds it no other goroutine
		// runs here, so the one started now runs on another thread. Let go
		// of it first and, with GOMAXPROCS 1, the scheduler would put that
		// goroutine right back here, again and again, for ever.
		inner := make(chan error, 1)
		go asThread(u, fn, inner)
		err := <-inner
		runtime.UnlockOSThread()
		done <- err
		return
	}
	var self saved
	if err := self.save(); err != nil {
		done <- fmt.Errorf("act as user %s: %w", u.Name, err)
		return // locked: the thread ends with this goroutine
	}
	if err := self.become(u); err != nil {
		done <- fmt.Errorf("act as user %s: %w", u.Name, err)
		return
	}
	err := runGuarded(u, fn)
	if rerr := self.restore(); rerr != nil {
		done <- err
		return
	}
	runtime.UnlockOSThread()
	done <- err
}

// runGuarded runs fn, turning a panic into an error.
func runGuarded(u User, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("file operation as %s panicked: %v", u.Name, r)
		}
	}()
	return fn()
}

// saved are the ids and umask of the agent's thread before become.
type saved struct {
	euid, egid uintptr
	groups     []uint32
	umask      uintptr // -1: unchanged
}

func (s *saved) save() error {
	s.euid, s.egid = uintptr(os.Geteuid()), uintptr(os.Getegid())
	n, _, e := syscall.RawSyscall(syscall.SYS_GETGROUPS, 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("getgroups: %w", e)
	}
	s.groups = make([]uint32, n+1) // never empty: &groups[0] must be valid
	n, _, e = syscall.RawSyscall(syscall.SYS_GETGROUPS, n, uintptr(unsafe.Pointer(&s.groups[0])), 0)
	if e != 0 {
		return fmt.Errorf("getgroups: %w", e)
	}
	s.groups = s.groups[:n]
	return nil
}

// restore gives the thread the agent's ids, groups and umask back: uid
// first (it brings back the capabilities needed for the rest).
func (s *saved) restore() error {
	keep := ^uintptr(0) // -1: leave that id as it is
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, keep, s.euid, keep); e != 0 {
		return e
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, keep, s.egid, keep); e != 0 {
		return e
	}
	if err := setgroups(s.groups); err != nil {
		return err
	}
	if s.umask != keep {
		syscall.RawSyscall(syscall.SYS_UMASK, s.umask, 0, 0)
	}
	return nil
}

// become saves the thread's umask and gives the calling (locked) thread u's umask, groups, effective gid
// and effective uid. Groups and gid first, while the thread still has
// CAP_SETGID; the uid last (it clears the effective capabilities).
func (s *saved) become(u User) error {
	// A sandbox whose seccomp profile predates the CLONE_FS rule refuses
	// unshare: the umask then stays the agent's (022, as strict), and what
	// is created gets explicit modes anyway.
	s.umask = ^uintptr(0)
	if _, _, e := syscall.RawSyscall(syscall.SYS_UNSHARE, syscall.CLONE_FS, 0, 0); e == 0 {
		s.umask, _, _ = syscall.RawSyscall(syscall.SYS_UMASK, UserUmask, 0, 0)
	} else if e != syscall.EPERM {
		return fmt.Errorf("unshare(CLONE_FS): %w", e)
	}
	if err := setgroups(groupList(u)); err != nil {
		return err
	}
	keep := ^uintptr(0)
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, keep, uintptr(u.GID), keep); e != 0 {
		return fmt.Errorf("setresgid(-1, %d, -1): %w", u.GID, e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, keep, uintptr(u.UID), keep); e != 0 {
		return fmt.Errorf("setresuid(-1, %d, -1): %w", u.UID, e)
	}
	return nil
}

// setgroups sets the calling thread's supplementary groups.
func setgroups(groups []uint32) error {
	var p uintptr
	if len(groups) > 0 {
		p = uintptr(unsafe.Pointer(&groups[0]))
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(groups)), p, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	return nil
}

// groupList is u's supplementary groups as setgroups(2) takes them, the
// primary group first.
func groupList(u User) []uint32 {
	groups := make([]uint32, 0, len(u.Groups)+1)
	groups = append(groups, u.GID)
	for _, g := range u.Groups {
		if g != u.GID {
			groups = append(groups, g)
		}
	}
	return groups
}
