package integration

import (
	"testing"
	"time"
)

// holdPipes (python, in the background) fills seven pipes of 1 MiB, which
// with the sandbox's other pipes is all a 128 MiB sandbox's pipes may hold
// (memoryMB/16, 21-pipe-buffer-limit.patch), waits for /tmp/go, then reads
// them back and tries to grow a new pipe to 1 MiB before and after closing
// them; /tmp/result tells.
const holdPipes = `cat > /tmp/hold.py <<'PY'
import fcntl, os, time
ps = []
for i in range(7):
    r, w = os.pipe(); fcntl.fcntl(w, 1031, 1 << 20)
    os.write(w, bytes([i]) * (1 << 20)); ps.append((r, w))
open('/tmp/filled', 'w').close()
while not os.path.exists('/tmp/go'): time.sleep(0.1)
ok = all(os.read(r, 2 << 20) == bytes([i]) * (1 << 20) for i, (r, w) in enumerate(ps))
r, w = os.pipe()
try: fcntl.fcntl(w, 1031, 1 << 20); grow = 'grew'
except OSError: grow = 'denied'
for r2, w2 in ps: os.close(r2); os.close(w2)
fcntl.fcntl(w, 1031, 1 << 20)
open('/tmp/result', 'w').write('data %s, %s while full, grew once freed\n' % (ok, grow))
PY
nohup python3 /tmp/hold.py >/tmp/hold.log 2>&1 &
for i in $(seq 100); do [ -e /tmp/filled ] && break; sleep 0.1; done; ls /tmp/filled`

// TestPipeLimitAcrossPause (runsc): full pipes keep their data across a
// pause and resume (a checkpoint and restore of the Sentry), and the
// sandbox's pipe capacity is counted again after the restore: a new pipe
// cannot grow to 1 MiB while they are held, and can once they are closed.
func TestPipeLimitAcrossPause(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(map[string]any{"memoryMB": 128})
	if out, code, err := sb.runErr("user", holdPipes, 20*time.Second); err != nil || code != 0 {
		t.Fatalf("fill the pipes: %q %d %v", out, code, err)
	}
	if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause: %d\n%s", code, tail(d.log.String(), 2000))
	}
	if code := d.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 60}, nil); code != 201 {
		t.Fatalf("resume: %d\n%s", code, tail(d.log.String(), 2000))
	}
	cmd := "touch /tmp/go; for i in $(seq 100); do [ -e /tmp/result ] && break; sleep 0.1; done; cat /tmp/result /tmp/hold.log"
	if out, _ := sb.run("user", cmd, 20*time.Second); out != "data True, denied while full, grew once freed\n" {
		t.Fatalf("after the resume: %q", out)
	}
}
