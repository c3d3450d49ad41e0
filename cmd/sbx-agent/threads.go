package main

import (
	"runtime"
	"sync"
)

// reservedThreads is how many OS threads the agent makes at start: beyond
// the few it runs on at rest, enough for every goroutine that may block in a
// syscall at once under load (file operations, spawns, the reaper) with
// GOMAXPROCS up to 4. Each costs ~70 µs of CPU at start, which every create
// pays.
const reservedThreads = 16

// reserveThreads has the Go runtime create n OS threads now, while the
// sandbox can still make them, and park them for reuse. A fork bomb later
// fills the sandbox's pids limit; a runtime that then needed a new thread
// (a goroutine blocked in a syscall hands its P to another thread) would
// die with "failed to create new OS thread", and with it PID 1 and the
// sandbox. Threads of goroutines that unlock before they exit stay idle in
// the runtime, which takes them before it makes new ones.
func reserveThreads(n int) {
	var started sync.WaitGroup
	release := make(chan struct{})
	for range n {
		started.Add(1)
		go func() {
			runtime.LockOSThread() // this goroutine's thread is its own until it unlocks
			started.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	started.Wait()
	close(release)
}
