package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostReach is run on the host as root: it opens the data dir, drops to
// nobody, and tries to open each path below it (so the test's own 0700
// temporary parents do not decide the answer).
const hostReach = `
import os, sys
fd = os.open(sys.argv[1], os.O_PATH)
os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
for rel in sys.argv[2:]:
    try:
        os.close(os.open(rel, os.O_RDONLY, dir_fd=fd)); print("reached", rel)
    except OSError as e:
        print("blocked", rel, e.errno)
`

// hostSetuid: sandbox root (here through sudo) plants a setuid-root copy of
// a shell in its own files. Inside it is the sandbox's business; on the host
// no other user may reach the file (the sandbox's tree is 0710 root:<its
// root's gid>), and under gVisor, where sandbox root's files are owned by
// host root, the overlay is mounted nosuid besides.
func hostSetuid(t *testing.T, sb *sandbox, rt string) {
	if out, code := sb.run("user", "sudo install -m 4755 /bin/bash /usr/local/bin/sbx-suid && stat -c %a /usr/local/bin/sbx-suid", 20*time.Second); code != 0 || out != "4755\n" {
		t.Fatalf("plant a setuid shell through sudo: %d %q", code, out)
	}
	tree := filepath.Join("run", "sandboxes", sb.ID)
	rels := []string{filepath.Join(tree, "rootfs/usr/local/bin/sbx-suid"), filepath.Join(tree, "layer/upper/usr/local/bin/sbx-suid")}
	for _, rel := range rels {
		if _, err := os.Stat(filepath.Join(sb.d.dataDir, rel)); err != nil {
			t.Fatalf("the planted file is not where the test looks: %v", err)
		}
	}
	out, err := exec.Command("python3", append([]string{"-c", hostReach, sb.d.dataDir}, rels...)...).CombinedOutput()
	if err != nil || strings.Count(string(out), "blocked ") != len(rels) {
		t.Errorf("a host user reached the sandbox's setuid file: %v\n%s", err, out)
	}
	mounts, _ := os.ReadFile("/proc/mounts")
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[1] == filepath.Join(sb.d.dataDir, tree, "rootfs") {
			if nosuid := strings.Contains(","+f[3]+",", ",nosuid,"); nosuid != (rt == "runsc") {
				t.Errorf("%s overlay options %s: nosuid %v, want %v", rt, f[3], nosuid, rt == "runsc")
			}
		}
	}
}
