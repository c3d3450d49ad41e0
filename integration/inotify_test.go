package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// holdInotify opens inotify instances until refused (at most 2000) in a
// background process that holds them for a minute, and prints the count.
var holdInotify = heldInBackground("ino", `import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while n < 2000 and libc.inotify_init1(0) >= 0:
    n += 1
open('/tmp/ino.count', 'w').write(str(n))
time.sleep(60)`, 10*time.Second)

// TestInotifyBounded (crun): a sandbox's `user` opening inotify instances
// until refused gets at most its own bound (128 per uid), and while it holds
// them host root (the daemon, systemd) and a neighbour sandbox can still open
// theirs. Before, the kernel charged every crun/runc sandbox's instances to
// host root's bucket (the user namespace's owner; fs.inotify.max_user_instances,
// 128 here): the sandbox got 128 and host root's inotify_init failed with
// EMFILE until it let go.
func TestInotifyBounded(t *testing.T) {
	d := startDaemon(t, "crun", "")
	a, b := d.create(map[string]any{}), d.create(map[string]any{})
	out, code := a.run("user", holdInotify, time.Minute)
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if code != 0 || err != nil {
		t.Fatalf("probe: exit %d: %q", code, out)
	}
	if n > 128 {
		t.Fatalf("the sandbox's user opened %d inotify instances, want at most its bound of 128", n)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("host root's inotify_init1 while the sandbox holds %d instances: %v", n, err)
	}
	unix.Close(fd)
	if out, code := b.run("user", holdInotify, time.Minute); code != 0 || strings.TrimSpace(out) == "0" {
		t.Fatalf("the neighbour sandbox's inotify instances: %q (exit %d)", out, code)
	}
}
