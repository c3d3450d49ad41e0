package integration

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// holdSignals sends itself 200,000 blocked real-time signals, of which the
// kernel queues what the limits allow (the count queued goes to
// /tmp/sig.count), and holds them for a minute in the background.
var holdSignals = heldInBackground("sig", `import os, signal, time
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
n = 0
try:
    while n < 200000:
        os.kill(os.getpid(), signal.SIGRTMIN); n += 1
except OSError:
    pass
q = [l for l in open('/proc/self/status') if l.startswith('SigQ:')][0].split()[1].split('/')[0]
open('/tmp/sig.count', 'w').write(q)  # queued, of this sandbox's uid (kill(2) past the limit only sets the bit)
time.sleep(60)`, 30*time.Second)

// holdQueues opens POSIX message queues of 80 KiB until refused and holds
// them for a minute in the background.
var holdQueues = heldInBackground("mq", `import ctypes, os, time
rt = ctypes.CDLL("librt.so.1", use_errno=True)
class attr(ctypes.Structure): _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long), ("cur", ctypes.c_long), ("pad", ctypes.c_long * 4)]
n = 0
while n < 1000 and rt.mq_open(b"/q%d" % n, os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr(0, 10, 8192, 0))) >= 0:
    n += 1
open('/tmp/mq.count', 'w').write(str(n))
time.sleep(60)`, 10*time.Second)

// hostQueue is what host root runs meanwhile: one queued real-time signal
// and one 80 KiB message queue (removed again); it prints "ok ok" when both
// work.
const hostQueue = `
import ctypes, os, signal
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
class sigval(ctypes.Union): _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
out = ["ok" if libc.sigqueue(os.getpid(), signal.SIGRTMIN, sigval(1)) == 0 else "sigqueue:" + os.strerror(ctypes.get_errno())]
class attr(ctypes.Structure): _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long), ("cur", ctypes.c_long), ("pad", ctypes.c_long * 4)]
name = b"/sbx-it-ucounts-%d" % os.getpid()
fd = rt.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr(0, 10, 8192, 0)))
out.append("ok" if fd >= 0 else "mq_open:" + os.strerror(ctypes.get_errno()))
if fd >= 0:
    rt.mq_unlink(name)
print(" ".join(out))
`

// TestSharedRlimitsKeepHostRoot (crun): a sandbox's `user` queueing
// real-time signals until refused, then opening message queues until
// refused, leaves host root its own: its sigqueue and mq_open work while the
// sandbox holds what it got. Before, the kernel charged both to host root's
// bucket (the user namespace's owner) against the limits host root had: the
// sandbox queued 96,318 signals and host root's sigqueue (and timer_create)
// failed with EAGAIN; 9 queues left host root's mq_open EMFILE.
func TestSharedRlimitsKeepHostRoot(t *testing.T) {
	d := startDaemon(t, "crun", "")
	sb := d.create(map[string]any{})
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_SIGPENDING, &lim); err != nil {
		t.Fatal(err)
	}
	for _, probe := range []struct{ name, script string }{{"signals", holdSignals}, {"queues", holdQueues}} {
		out, code := sb.run("user", probe.script, 2*time.Minute)
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if code != 0 || err != nil || n == 0 {
			t.Fatalf("%s probe: exit %d: %q", probe.name, code, out)
		}
		host, err := exec.Command("python3", "-c", hostQueue).CombinedOutput()
		if err != nil || strings.TrimSpace(string(host)) != "ok ok" {
			t.Fatalf("host root while the sandbox holds %d %s: %q %v", n, probe.name, host, err)
		}
		t.Logf("the sandbox holds %d %s (host root's RLIMIT_SIGPENDING %d); host root: %s", n, probe.name, lim.Cur, host)
	}
}
