package runtime

import (
	"os/exec"
	"testing"
	"time"
)

// TestNotifyExit: the callback comes once the watched process has ended
// (here a zombie child, as a runtime's init the daemon has not reaped yet
// looks), not before; a pid already gone gets it at once.
func TestNotifyExit(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait() //nolint:errcheck // reaps the zombie at the end
	fired := make(chan struct{})
	if _, err := NotifyExit(cmd.Process.Pid, func() { close(fired) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
		t.Fatal("fired while the process runs")
	case <-time.After(200 * time.Millisecond):
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("no callback 5 s after the process was killed")
	}
	if ProcessAlive(cmd.Process.Pid) {
		t.Fatal("the zombie counts as alive")
	}
	_ = cmd.Wait()
	gone := make(chan struct{})
	if _, err := NotifyExit(cmd.Process.Pid, func() { close(gone) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("no callback for a pid already gone")
	}
}

// TestNotifyExitStop: a stopped watch never calls back, and releases its
// descriptor.
func TestNotifyExitStop(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait() //nolint:errcheck // reaps the zombie at the end
	fired := make(chan struct{})
	stop, err := NotifyExit(cmd.Process.Pid, func() { close(fired) })
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop()
	_ = cmd.Process.Kill()
	select {
	case <-fired:
		t.Fatal("a stopped watch called back")
	case <-time.After(300 * time.Millisecond):
	}
}
