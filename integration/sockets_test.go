package integration

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// holdTCP (python, in the background) holds 1000 TCP connections over
// loopback written full, nobody reading: all of a 128 MiB sandbox's socket
// memory bound (memoryMB/16, 22-socket-buffer-limit.patch); /tmp/held once
// they are.
const holdTCP = `cat > /tmp/hold.py <<'PY'
import socket, time
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1024)
cs = []
for i in range(1000):
    c = socket.create_connection(l.getsockname()); a, _ = l.accept()
    cs.append((c, a)); c.setblocking(False)
    try:
        while True: c.send(bytes(1 << 20))
    except BlockingIOError: pass
open('/tmp/held', 'w').close()
time.sleep(600)
PY
nohup python3 /tmp/hold.py >/tmp/hold.log 2>&1 & echo $! >/tmp/hold.pid
for i in $(seq 300); do [ -e /tmp/held ] && break; sleep 0.1; done; ls /tmp/held`

// TestSocketBoundKeepsAgent (runsc): while a process holds all of the
// sandbox's socket memory bound, the agent (the sandbox's init, whose
// sockets may use a reserve past the bound) still serves: commands run and
// 1 MiB goes up and down through the file API, each within 10 s; then the
// holder is killed and the host cgroup never reached its limit.
func TestSocketBoundKeepsAgent(t *testing.T) {
	sb := startDaemon(t, "runsc", "").create(map[string]any{"memoryMB": 128})
	if out, code, err := sb.runErr("user", holdTCP, 60*time.Second); err != nil || code != 0 {
		t.Fatalf("hold the sockets: %q %d %v", out, code, err)
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		if out, code, err := sb.runErr("user", "seq 20000 | md5sum", 10*time.Second); err != nil || code != 0 || !strings.Contains(out, "-") {
			t.Fatalf("command with the bound held: %q %d %v", out, code, err)
		}
		if code, msg := sb.upload("/home/user/up", body); code != 200 {
			t.Fatalf("upload with the bound held: %d %s", code, msg)
		}
		if got, code := sb.download("/home/user/up"); code != 200 || got != string(body) {
			t.Fatalf("download with the bound held: %d, %d bytes", code, len(got))
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Fatalf("command, upload and download took %v with the bound held", d)
		} else {
			t.Logf("round %d: command, 1 MiB up and down in %v", i, d)
		}
	}
	if out, code, err := sb.runErr("user", "kill $(cat /tmp/hold.pid) && cat /tmp/hold.log", 20*time.Second); err != nil || code != 0 {
		t.Fatalf("kill the holder: %q %d %v", out, code, err)
	}
	sb.usableAfter(t)
	logCgroup(t, sb.ID)
	noHostOOM(t, sb.ID, true)
}
