package oci

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
		if err := s.start(cmd); err != nil {
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
