package daemon

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLockDataDir: a second lock of a held data dir fails at once with
// ErrDataDirBusy naming the dir and the holder's pid; release lets the
// next one in.
func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	release, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockDataDir(dir)
	if !errors.Is(err, ErrDataDirBusy) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second lock: %v, want ErrDataDirBusy naming %s and pid %d", err, dir, os.Getpid())
	}
	release()
	release2, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	release2()
}

// TestLockDataDirKill9: the kernel drops the lock of a holder killed with
// SIGKILL (no cleanup runs), and a child the holder started without the
// descriptor (close-on-exec) does not keep it.
func TestLockDataDirKill9(t *testing.T) {
	if os.Getenv("SBX_TEST_LOCK_HOLDER") != "" {
		holdLock(os.Getenv("SBX_TEST_LOCK_HOLDER"))
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDataDirKill9$")
	cmd.Env = append(os.Environ(), "SBX_TEST_LOCK_HOLDER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var child int
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "locked, child "); ok {
			child, _ = strconv.Atoi(v)
			break
		}
	}
	if child == 0 {
		t.Fatalf("holder did not lock: %v", sc.Err())
	}
	defer func() { _ = (&os.Process{Pid: child}).Kill() }()
	if _, err := lockDataDir(dir); !errors.Is(err, ErrDataDirBusy) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("lock while held: %v, want ErrDataDirBusy naming pid %d", err, cmd.Process.Pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	release, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after kill -9 of the holder (its child %d still running): %v", child, err)
	}
	release()
}

// holdLock is the holder process: it locks dir, starts a long-lived child
// (as the daemon starts shims that outlive it), says so and waits.
func holdLock(dir string) {
	if _, err := lockDataDir(dir); err != nil {
		os.Exit(3)
	}
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		os.Exit(4)
	}
	os.Stdout.WriteString("locked, child " + strconv.Itoa(c.Process.Pid) + "\n")
	time.Sleep(time.Minute)
}
