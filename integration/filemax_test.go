package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// holdFiles makes 50 processes hold 4,000 eventfds each for 30 s in the
// background, and prints "held" once they have them.
const holdFiles = `cat >/tmp/files.py <<'PY'
import os, time
for i in range(50):
    if os.fork() == 0:
        fds = []
        try:
            while len(fds) < 4000:
                fds.append(os.eventfd(0))
        except OSError:
            pass
        time.sleep(30)
        os._exit(0)
PY
setsid nohup python3 /tmp/files.py >/dev/null 2>&1 &
sleep 5; echo held`

// TestOpenFilesRoom (crun): a sandbox's open files count in the host's
// fs.file-max, so while one holds 200,000 of them the host must still have
// room for two sandboxes at their descriptor bound (pids 512 × RLIMIT_NOFILE
// 4096 each), or two such sandboxes would make every host process without
// CAP_SYS_ADMIN fail open(2) with ENFILE. Before, the bound was the kernel's
// default from RAM (2,466,186 here): 2.3 Mi of room. The daemon raises it
// (it stays raised, so "before" shows on a host at the kernel's default).
func TestOpenFilesRoom(t *testing.T) {
	d := startDaemon(t, "crun", "")
	sb := d.create(map[string]any{"memoryMB": 512})
	if out, code := sb.run("user", holdFiles, time.Minute); code != 0 || !strings.Contains(out, "held") {
		t.Fatalf("probe: exit %d: %q", code, out)
	}
	b, err := os.ReadFile("/proc/sys/fs/file-nr")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	nr, _ := strconv.ParseUint(f[0], 10, 64)
	limit, _ := strconv.ParseUint(f[2], 10, 64)
	const twoSandboxes = 2 * 512 * 4096
	if limit-nr < twoSandboxes {
		t.Fatalf("host open files %d of %d while the sandbox holds its files: room for %d more, want at least %d", nr, limit, limit-nr, twoSandboxes)
	}
	t.Logf("host open files %d of %d", nr, limit)
}
