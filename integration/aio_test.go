package integration

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// holdAIO asks io_setup for AIO contexts of 32,768 events until refused or
// 1 Mi events are held (64 MiB of rings), prints the events it got and holds
// them for a minute in the background.
var holdAIO = heldInBackground("aio", `import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
held, n = [], 0
while n < 1 << 20:
    c = ctypes.c_ulong(0)
    if libc.syscall(206, 32768, ctypes.byref(c)) != 0:  # io_setup
        break
    held.append(c); n += 32768
open('/tmp/aio.count', 'w').write(str(n))
time.sleep(60)`, 10*time.Second)

// hostAIO is host root's io_setup of 128 events meanwhile ("ok" if it works).
const hostAIO = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
c = ctypes.c_ulong(0)
if libc.syscall(206, 128, ctypes.byref(c)) == 0:
    libc.syscall(207, c)  # io_destroy
    print("ok")
else:
    print("io_setup:", os.strerror(ctypes.get_errno()))
`

// TestAIOKeepsHost (crun): a sandbox's `user` taking AIO events until
// refused or holding 1 Mi of them (64 MiB of rings, charged to its memory
// cgroup) leaves host root able to io_setup. Before, fs.aio-max-nr (65,536
// events for the whole host, no bound per user or namespace) went to the
// sandbox at its second context, and host root's and every other sandbox's
// io_setup failed with EAGAIN while it held them. The bound the daemon
// raises stays raised on the host, so "before" shows on a host at the
// kernel's default (65,536) only.
func TestAIOKeepsHost(t *testing.T) {
	d := startDaemon(t, "crun", "")
	sb := d.create(map[string]any{})
	out, code := sb.run("user", holdAIO, time.Minute)
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if code != 0 || err != nil || n == 0 {
		t.Fatalf("probe: exit %d: %q", code, out)
	}
	host, err := exec.Command("python3", "-c", hostAIO).CombinedOutput()
	if err != nil || strings.TrimSpace(string(host)) != "ok" {
		t.Fatalf("host root's io_setup while the sandbox holds %d AIO events: %q %v", n, host, err)
	}
	t.Logf("the sandbox holds %d AIO events; host root's io_setup: %s", n, host)
}
