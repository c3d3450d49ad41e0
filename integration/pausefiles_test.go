package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// plantFiles makes, as root inside, what a copy out of the sandbox must not
// follow or fill the host with: a 50 GiB sparse file with 1 MiB of data, a
// symlink to the host's /etc/shadow and one to /, a hard link, a FIFO
// nobody writes, a unix socket, a name with a newline, a user xattr.
const plantFiles = `set -e; mkdir -p /home/user/h && cd /home/user/h
truncate -s 50G sparse && dd if=/dev/urandom of=sparse bs=1M count=1 seek=20000 conv=notrunc status=none
ln -s /etc/shadow shadow-link && ln -s / root-link && echo data > file && ln file hard
mkfifo fifo && python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")'
echo nl > "$(printf 'new\nline')"
python3 -c 'import os; os.setxattr("file", "user.k", b"v")'
echo planted`

// checkFiles prints what plantFiles made, as seen inside.
const checkFiles = `cd /home/user/h && stat -c '%n|%F|%s|%h' sparse shadow-link root-link file hard fifo sock | sort
readlink shadow-link root-link; cat "$(printf 'new\nline')"; python3 -c 'import os; print(os.getxattr("file", "user.k"))'`

// TestPauseHostileFiles (runsc): the pause copies the sandbox's files to
// the host (cp -a of its layer's upper directory): symlinks are copied as
// links, never followed (the host's /etc/shadow unchanged, no host tree
// copied), a FIFO is copied as a FIFO (never read: the pause does not
// hang), a 50 GiB sparse file takes its data's blocks on the host, not its
// size; after the resume the sandbox sees every file as it was.
func TestPauseHostileFiles(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	shadow, _ := os.ReadFile("/etc/shadow")
	sb := d.create(map[string]any{"timeout": 300})
	if out, code := sb.run("root", plantFiles, time.Minute); code != 0 {
		t.Fatalf("plant: %q (exit %d)", out, code)
	}
	before, _ := sb.run("root", checkFiles, time.Minute)
	t0 := time.Now()
	if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause: %d", code)
	}
	t.Logf("pause took %v", time.Since(t0))
	img := filepath.Join(d.dataDir, "images", "paused", sb.ID)
	out, err := exec.Command("du", "-s", "--block-size=1M", img).Output()
	if err != nil {
		t.Fatalf("du %s: %v", img, err)
	}
	mb, _ := strconv.Atoi(strings.Fields(string(out))[0])
	t.Logf("paused image: %d MiB on the host", mb)
	if mb > 1024 {
		t.Fatalf("paused image takes %d MiB of the host's disk: the sparse file was filled in", mb)
	}
	if now, _ := os.ReadFile("/etc/shadow"); string(now) != string(shadow) {
		t.Fatal("the host's /etc/shadow changed")
	}
	if code := d.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 300}, nil); code != 201 {
		t.Fatalf("resume: %d", code)
	}
	after, _ := sb.run("root", checkFiles, time.Minute)
	if after != before || !strings.Contains(after, "sparse|regular file|53687091200|1") || !strings.Contains(after, "hard|regular file|5|2") ||
		!strings.Contains(after, "fifo|fifo|") || !strings.Contains(after, "/etc/shadow\n/\n") {
		t.Fatalf("files after the resume:\n%s\nbefore:\n%s", after, before)
	}
}
