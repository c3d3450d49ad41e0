package osthread

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fromMain is what TestMain saw calling Go from the main goroutine while it
// was on the main thread with GOMAXPROCS 1, where the new goroutine runs
// next on that same thread unless Go prevents it.
var fromMain struct {
	tries, onMain int
	err           error
}

func TestMain(m *testing.M) {
	prev := runtime.GOMAXPROCS(1)
	for i := 0; i < 50 && fromMain.err == nil; i++ {
		if unix.Gettid() != unix.Getpid() {
			continue // the main goroutine moved off the main thread
		}
		fromMain.tries++
		tidc := make(chan int)
		Go(func() { tidc <- unix.Gettid() })
		tid := <-tidc
		if tid == unix.Getpid() {
			fromMain.onMain++
		}
		fromMain.err = waitGone(tid)
	}
	runtime.GOMAXPROCS(prev)
	os.Exit(m.Run())
}

// TestGoNeverOnMainThread: f never runs on the main thread, and its thread
// exits after f.
func TestGoNeverOnMainThread(t *testing.T) {
	if fromMain.tries == 0 {
		t.Fatal("the main goroutine was never on the main thread: nothing tested")
	}
	if fromMain.onMain > 0 {
		t.Fatalf("f ran on the main thread %d times in %d", fromMain.onMain, fromMain.tries)
	}
	if fromMain.err != nil {
		t.Fatal(fromMain.err)
	}
	for i := 0; i < 100; i++ {
		tidc := make(chan int)
		Go(func() { tidc <- unix.Gettid() })
		tid := <-tidc
		if tid == unix.Getpid() {
			t.Fatal("f ran on the main thread")
		}
		if err := waitGone(tid); err != nil {
			t.Fatal(err)
		}
	}
}

// waitGone waits for thread tid of this process to exit.
func waitGone(tid int) error {
	p := fmt.Sprintf("/proc/self/task/%d", tid)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			return nil
		}
	}
	return fmt.Errorf("thread %d still there after f returned", tid)
}
