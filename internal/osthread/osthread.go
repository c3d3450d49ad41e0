// Package osthread runs functions on OS threads of their own, for work that
// changes a thread's namespaces or credentials.
package osthread

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Go runs f in a new goroutine locked to an OS thread that is not the
// process's main thread, and never unlocks it: when f returns, the thread
// exits instead of going back to the scheduler, so whatever f changed about
// it (namespaces, fs_struct, credentials) dies with it.
//
// The main thread is kept out because /proc/self shows its view: a main
// thread in another mount or network namespace would change what
// /proc/self/mountinfo and /proc/self/net say for the whole process, and Go
// never ends the main thread (it would stay in that namespace).
func Go(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			f()
			return
		}
		// On the main thread. While this goroutine holds it, no other
		// goroutine can run here: start f on another and give it back.
		locked := make(chan struct{})
		Go(func() {
			close(locked)
			f()
		})
		<-locked
		runtime.UnlockOSThread()
	}()
}
