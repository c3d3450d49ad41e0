package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// holdPTYs opens /dev/ptmx until refused (at most 4000) and holds the PTYs
// for a minute in the background; it prints how many it got.
var holdPTYs = heldInBackground("pty", `import os, time
fds = []
try:
    while len(fds) < 4000:
        fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
except OSError:
    pass
open('/tmp/pty.count', 'w').write(str(len(fds)))
time.sleep(60)`, 10*time.Second)

// TestPTYsBounded (crun): a sandbox's `user` opening PTYs until refused gets
// at most its own bound (256), and meanwhile a neighbour sandbox opens a PTY
// and runs a command in a terminal. Before, kernel.pty.max bounded every
// container's devpts together (3,072 past the host's reserve): the sandbox
// got 3,071 and the neighbour's openpty failed with ENOSPC.
func TestPTYsBounded(t *testing.T) {
	d := startDaemon(t, "crun", "")
	a, b := d.create(map[string]any{}), d.create(map[string]any{})
	out, code := a.run("user", holdPTYs, time.Minute)
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if code != 0 || err != nil || n == 0 {
		t.Fatalf("probe: exit %d: %q", code, out)
	}
	if n > 256 {
		t.Fatalf("the sandbox's user opened %d PTYs, want at most its bound of 256", n)
	}
	const tryPTY = `python3 -c 'import os; m, s = os.openpty(); print("pty", os.ttyname(s))' && script -qc 'tty' /dev/null`
	if out, code := b.run("user", tryPTY, time.Minute); code != 0 || !strings.Contains(out, "/dev/pts/") {
		t.Fatalf("the neighbour's PTY while the sandbox holds %d: %q (exit %d)", n, out, code)
	}
}
