package oci

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNSStarter: a command started by the starter runs in a mount namespace
// of its own without the cgroup2 mount, sees mounts the host made after the
// starter began (a fresh namespace per command), and leaves the daemon's
// own namespace as it was.
func TestNSStarter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root")
	}
	s, err := hybridStarter()
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Readlink("/proc/self/ns/mnt")
	unifiedBefore := mountedAt(t, "/proc/self/mountinfo", cgroupRoot+"/unified")

	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	if err := os.WriteFile(filepath.Join(dir, "probe"), []byte("seen"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		script := `readlink /proc/self/ns/mnt; cat "$1"/probe; echo; grep -c " ` + cgroupRoot + `/unified " /proc/self/mountinfo || true`
		cmd := exec.Command("sh", "-c", script, "sh", dir)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := s.start(context.Background(), cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 3 || lines[0] == self || lines[1] != "seen" || lines[2] != "0" {
			t.Fatalf("want own ns, the new mount and no cgroup2 mount; got %q (self %s)", lines, self)
		}
	}
	if now, _ := os.Readlink("/proc/self/ns/mnt"); now != self {
		t.Fatalf("daemon's mount namespace changed: %s → %s", self, now)
	}
	if mountedAt(t, "/proc/self/mountinfo", cgroupRoot+"/unified") != unifiedBefore {
		t.Fatal("the daemon's cgroup2 mount changed")
	}
}

func mountedAt(t *testing.T, mountinfo, path string) bool {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), " "+path+" ")
}

// TestNSStarterGivesUp: a caller whose context ends while the starter is
// busy gets the context's error, and a command the starter starts after
// that is killed and reaped, not left running.
func TestNSStarterGivesUp(t *testing.T) {
	s := &nsStarter{reqs: make(chan nsReq)} // nobody serves it yet
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.start(ctx, exec.Command("true")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("busy starter: %v, want DeadlineExceeded", err)
	}
	pidc := make(chan int, 1)
	go func() { // a starter that serves late
		req := <-s.reqs
		time.Sleep(100 * time.Millisecond)
		err := req.cmd.Start()
		if err == nil {
			pidc <- req.cmd.Process.Pid
		}
		req.done <- err
	}()
	cmd := exec.Command("sleep", "60")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := s.start(ctx2, cmd); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("late start: %v, want DeadlineExceeded", err)
	}
	proc := fmt.Sprintf("/proc/%d", <-pidc)
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(proc); os.IsNotExist(err) {
			break // killed and waited for: not even a zombie
		}
		if time.Now().After(end) {
			t.Fatal("the late command was not killed and reaped")
		}
	}
}
