package runtime

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestProcessAliveWithoutDescriptors: a daemon that runs out of descriptors
// (EMFILE) does not take a live process for a dead one. Before, every read
// error of /proc/<pid>/stat was death, and when one tenant took the daemon
// to EMFILE its watchdog "reaped" every sandbox it checked meanwhile, other
// tenants' included: their records went, while the reaps, short of
// descriptors themselves, left their processes running (measured by hand on
// runsc: docs/SECURITY.md). A pid that is gone is still dead.
func TestProcessAliveWithoutDescriptors(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(cmd.Process.Pid) {
		t.Fatalf("pid %d of an exited and reaped process reported alive", cmd.Process.Pid)
	}

	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	low := saved
	low.Cur = 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
			t.Error(err)
		}
	}()
	for {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, f)
	}
	if !ProcessAlive(os.Getpid()) {
		t.Fatal("this process reported dead while its descriptors are exhausted (EMFILE)")
	}
}

// TestExitedState: a task its parent has reaped reads 'X' in /proc until
// the kernel releases it; it is dead, as a zombie is (the watchdog, woken
// by the pidfd, looked in that window and took a dead init for alive).
func TestExitedState(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want bool
	}{
		{"42 (sleep) S 1 42 42 0", false},
		{"42 (sleep) R 1 42 42 0", false},
		{"42 (sleep) D 1 42 42 0", false},
		{"42 (sleep) t 1 42 42 0", false},
		{"42 (sleep) Z 1 42 42 0", true},
		{"42 (sleep) X 1 42 42 0", true},
		{"42 (sleep) x 1 42 42 0", true},
		{"42 (a) Z) S 1 42", false}, // the name may hold ") Z"
		{"42 (a) S) Z 1 42", true},
		{"42 (sleep)", false},
		{"", false},
	} {
		if got := exitedState(tc.stat); got != tc.want {
			t.Errorf("exitedState(%q) = %v, want %v", tc.stat, got, tc.want)
		}
	}
}
