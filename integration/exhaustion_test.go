package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestContainedExhaustion: fork bombs (as user and as root), memory
// balloons and memory the kernel commits itself (a read(2) into a fresh
// buffer, a file in a memory-backed /tmp) end inside the sandbox, as on a
// machine: afterwards a process started before them still runs and the same
// sandbox answers a command and the file API; each root bomb and each
// Sentry-committed case runs three times in a row. On runsc every command
// starts with RLIMIT_NPROC from the sandbox's memory and pids limit (gVisor
// binds root by it too), the agent kills the largest process when the
// Sentry's memory runs low (oomguard), and the Sentry refuses memory past
// the sandbox's limit (third_party/gvisor/patches/20-sentry-memory-limit.patch:
// the syscall fails or the faulting process is killed) and bounds what pipes
// and socket buffers hold on its heap (patches 21 and 22), so the host never
// kills the Sentry; on crun the pids cgroup and the kernel's OOM killer do it.
func TestContainedExhaustion(t *testing.T) {
	const bomb = "bomb() { bomb | bomb & }; bomb; sleep 6"
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "")
			for _, c := range []struct {
				name, user, cmd string
				memoryMB, times int
				mayPass         string // a runtime on which the command may succeed
				only            string // the one runtime the case applies to, if any
				hostCgroup      bool   // on runsc, the host cgroup must never reach its limit
			}{
				{"fork bomb", "user", bomb, 512, 1, rt, "", false},
				{"fork bomb in 1 GiB", "user", bomb, 1024, 1, rt, "", false}, // bounded by the pids limit, not memory
				{"fork bomb as root", "root", bomb, 512, 3, rt, "", false},
				{"fork bomb as root in 128 MiB", "root", bomb, 128, 1, rt, "", false}, // root's limit includes the agent's threads
				{"one balloon", "user", "python3 -c 'b = b\"x\" * (400 << 20); print(len(b))'", 128, 1, "", "", false},
				{"growing balloon", "user", "python3 -c '\nl = []\nwhile True: l.append(b\"x\" * (8 << 20))'", 256, 1, "", "", false},
				// The kernel writes the 400 MiB (gVisor: from the Sentry's
				// own address space): succeeds only if it got them all.
				{"read into a fresh buffer", "user", readZero, 128, 3, "", "", false},
				{"read into sparsely touched memory", "user", readvTouched, 128, 3, "", "", false},
				// runsc's /tmp is the Sentry's tmpfs; crun's is the
				// writable layer, bounded by the disk quota (Known gaps).
				// The shell truncates the file (no exec: while it fills the
				// memory, starting rm may fail).
				{"tmpfs file", "user", "head -c 400M /dev/zero > /tmp/fill; r=$?; : >/tmp/fill; rm -f /tmp/fill; exit $r", 256, 3, "", "runsc", false},
				// gVisor keeps pipe buffers on the Sentry's heap, outside
				// the memory limit (21-pipe-buffer-limit.patch bounds them);
				// Linux at pipe-user-pages-soft.
				{"full pipes", "user", fullPipes, 128, 2, "", "", false},
				// Socket buffers are on the Sentry's heap too
				// (22-socket-buffer-limit.patch bounds what they hold
				// together); Linux clamps SO_SNDBUF at wmem_max.
				{"full unix sockets", "user", fullUnixSockets, 128, 2, "", "", true},
				// runsc only: on a cgroup v1 host crun's TCP buffers
				// are the host kernel's (tcp_mem), not the sandbox's.
				{"full tcp connections", "user", fullTCP, 128, 2, "", "runsc", true},
			} {
				t.Run(c.name, func(t *testing.T) {
					if c.only != "" && c.only != rt {
						t.Skipf("runsc only")
					}
					sb := d.create(map[string]any{"memoryMB": c.memoryMB})
					sibling := sb.startSibling(t)
					for i := 0; i < c.times; i++ {
						out, code, err := sb.runErr(c.user, c.cmd, 6*time.Second)
						t.Logf("%s: exit %d, %v: %q", c.name, code, err, tail(out, 200))
						if err == nil && code == 0 && c.mayPass != rt {
							t.Fatalf("%s succeeded: %q", c.name, out)
						}
						sb.siblingAlive(t, sibling)
					}
					sb.usableAfter(t)
					if c.hostCgroup && rt == "runsc" {
						logCgroup(t, sb.ID)
						noHostOOM(t, sb.ID, true)
					}
				})
			}
		})
	}
}

// fullUnixSockets fills 400 unix socketpairs, each end's SO_SNDBUF asked
// for 16 MiB (8 MiB on gVisor, wmem_max on Linux), that nobody reads; exit
// 0 only if they hold 8 MiB each. ENOBUFS counts as full.
const fullUnixSockets = `python3 -c "
import errno, socket, sys
n, ps = 0, []
for i in range(400):
    a, b = socket.socketpair(); ps.append((a, b))
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 << 20); a.setblocking(False)
    try:
        while True: n += a.send(bytes(1 << 20))
    except BlockingIOError: pass
    except OSError as e:
        if e.errno != errno.ENOBUFS: raise
print(n >> 20, 'MiB'); sys.exit(n < 400 * (8 << 20))"`

// fullTCP opens 1000 TCP connections over loopback and writes each full
// (twice, as acknowledged data leaves the send buffer), nobody reading;
// exit 0 only if they took 1 MiB each (gVisor's default send buffer; each
// receive buffer holds 1 MiB more).
const fullTCP = `python3 -c "
import socket, sys, time
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1024)
n, cs = 0, []
def fill(c):
    global n
    try:
        while True: n += c.send(bytes(1 << 20))
    except BlockingIOError: pass
for i in range(1000):
    c = socket.create_connection(l.getsockname()); a, _ = l.accept()
    cs.append((c, a)); c.setblocking(False); fill(c)
time.sleep(1)
for c, a in cs: fill(c)
print(n >> 20, 'MiB'); sys.exit(n < 1000 << 20)"`

// readZero reads 400 MiB from /dev/zero into a fresh buffer in one read(2);
// exit 0 only if it got them all.
const readZero = `python3 -c "import os, sys; b = os.read(os.open('/dev/zero', os.O_RDONLY), 400 << 20); print(len(b)); sys.exit(len(b) != 400 << 20)"`

// fullPipes fills 400 pipes, each grown to 1 MiB (F_SETPIPE_SZ) if it may
// be, that nobody reads; exit 0 only if they hold 400 MiB.
const fullPipes = `python3 -c "
import fcntl, os, sys
n, ps, denied = 0, [], 0
for i in range(400):
    r, w = os.pipe(); ps.append((r, w)); os.set_blocking(w, False)
    try: fcntl.fcntl(w, 1031, 1 << 20)
    except OSError: denied += 1
    try:
        while True: n += os.write(w, bytes(65536))
    except BlockingIOError: pass
print(n >> 20, 'MiB,', denied, 'denied'); sys.exit(n < 400 << 20)"`

// readvTouched touches one byte in every 2 MiB of a 400 MiB mapping (so that
// it is mapped before the read), then readv(2)s /dev/zero into all of it;
// exit 0 only if it got them all.
const readvTouched = `python3 -c "
import mmap, os, sys
m = mmap.mmap(-1, 400 << 20)
for i in range(0, len(m), 2 << 20): m[i] = 1
n = os.readv(os.open('/dev/zero', os.O_RDONLY), [m])
print(n); sys.exit(n != len(m))"`

// TestFullTmpfsKeepsAgent: on runsc, a /tmp file that holds all of a 128 MiB
// sandbox's memory (no kill frees it) leaves the agent working: the file API
// uploads and downloads, removes the file, and afterwards a process started
// before still runs and commands start again. The sandbox's init may use a
// reserve past the limit and waits rather than dies when even that is
// gone (20-sentry-memory-limit.patch: without it the agent faulted past the
// limit and was killed with the sandbox, 1 of 1). Twice in one sandbox.
func TestFullTmpfsKeepsAgent(t *testing.T) {
	sb := startDaemon(t, "runsc", "").create(map[string]any{"memoryMB": 128})
	sibling := sb.startSibling(t)
	body := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	for round := 0; round < 2; round++ {
		if out, code, err := sb.runErr("user", "head -c 400M /dev/zero > /tmp/fill", 20*time.Second); err == nil && code == 0 {
			t.Fatalf("400 MiB written to /tmp in 128 MiB: %q", out)
		}
		for i := 0; i < 3; i++ {
			path := fmt.Sprintf("/home/user/up%d", i)
			if code, msg := sb.upload(path, body); code != 200 {
				t.Fatalf("round %d: upload with the memory full: %d %s", round, code, msg)
			}
			if got, code := sb.download(path); code != 200 || got != string(body) {
				t.Fatalf("round %d: download with the memory full: %d, %d bytes", round, code, len(got))
			}
		}
		if code := sb.fsCall("user", "Remove", map[string]any{"path": "/tmp/fill"}); code != 200 {
			t.Fatalf("round %d: remove the fill through the file API: %d", round, code)
		}
		sb.siblingAlive(t, sibling)
		sb.usableAfter(t)
	}
}

// TestMemoryWithinLimit: what a sandbox was given it can use. In 512 MiB,
// 320 MiB allocated, touched and freed five times in a row, 195 threads (a
// stack each) next to 256 MiB of heap, and a 300 MiB file written through
// the page cache all succeed: on runsc the Sentry's memory limit counts
// allocated pages, so it must not count a thread's stack as 2 MiB
// (20-sentry-memory-limit.patch allocates stacks in 64 KiB units).
func TestMemoryWithinLimit(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			sb := startDaemon(t, rt, "").create(map[string]any{"memoryMB": 512})
			for _, c := range []struct{ name, cmd, want string }{
				{"allocate and free", allocFree, "done\n"},
				{"threads and heap", threadsHeap, "done\n"},
				{"big file", "head -c 300M /dev/urandom > big && sync && stat -c %s big && rm big", "314572800\n"},
			} {
				out, code, err := sb.runErr("user", c.cmd, 60*time.Second)
				if err != nil || code != 0 || out != c.want {
					t.Errorf("%s: %q %d %v", c.name, tail(out, 300), code, err)
				}
			}
		})
	}
}

const allocFree = `python3 -c "
for i in range(5):
    b = bytearray(320 << 20)
    for j in range(0, len(b), 4096): b[j] = 1
    del b
print('done')"`

const threadsHeap = `python3 -c "
import threading
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range(195)]
for t in ts: t.start()
b = bytearray(256 << 20)
for j in range(0, len(b), 4096): b[j] = 1
ev.set()
for t in ts: t.join()
print('done')"`

// startSibling starts a background process as root (it outlives its
// command, as E2B background processes do) and returns its pid.
func (s *sandbox) startSibling(t *testing.T) string {
	t.Helper()
	out, code, err := s.runErr("root", "nohup sleep 600 >/dev/null 2>&1 & echo $!", 20*time.Second)
	if pid := strings.TrimSpace(out); err == nil && code == 0 && pid != "" {
		return pid
	}
	t.Fatalf("start the sibling: %q %d %v", out, code, err)
	return ""
}

// siblingAlive: the process started by startSibling still runs.
func (s *sandbox) siblingAlive(t *testing.T, pid string) {
	t.Helper()
	out, code, err := s.runWhenFree("root", "kill -0 "+pid+" && echo running")
	if err != nil || code != 0 || !strings.HasSuffix(out, "running\n") { // bash may retry a fork while a bomb winds down
		t.Fatalf("the process started before is gone: %q %d %v", out, code, err)
	}
}

// runWhenFree runs cmd, starting it again while the start fails with
// EAGAIN (for up to 20 s): the last processes of a fork bomb may still hold
// the sandbox's pids when a check runs, as on a machine where a bomb winds
// down; the checks are about what survived, not how soon a fork works.
func (s *sandbox) runWhenFree(user, cmd string) (string, int, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, code, err := s.runErr(user, cmd, 20*time.Second)
		if err == nil || !strings.Contains(err.Error(), "resource temporarily unavailable") || time.Now().After(deadline) {
			return out, code, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// usableAfter: the sandbox answers a command and the file API.
func (s *sandbox) usableAfter(t *testing.T) {
	t.Helper()
	if out, code, err := s.runWhenFree("user", "echo alive"); err != nil || code != 0 || out != "alive\n" {
		t.Fatalf("sandbox unusable afterwards: %q %d %v", out, code, err)
	}
	if code, body := s.upload("/home/user/after.txt", []byte("still here")); code != 200 {
		t.Fatalf("upload afterwards: %d %s", code, body)
	}
	if body, code := s.download("/home/user/after.txt"); code != 200 || body != "still here" {
		t.Fatalf("download afterwards: %d %q", code, body)
	}
}

// TestContainedExhaustionInKernel: a fork bomb started from code-interpreter
// code is contained inside too: on runsc the interpreter's drivers start with the
// same process limit as commands (/.sbx/nproc), on crun the pids cgroup
// bounds them. So is a memory balloon in a cell: the kernel dies, the next
// cell gets a fresh one.
func TestContainedExhaustionInKernel(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "")
			sb := d.create(map[string]any{"templateID": "code-interpreter-v1"})
			sibling := sb.startSibling(t)
			// A bomb that stops forking after 5 s, so that its processes,
			// which no deadline kills (a cell's children are its own), end.
			out := sb.runCode(t, "import subprocess\nsubprocess.run('bomb() { [ $SECONDS -lt 5 ] && { bomb | bomb & }; }; bomb; sleep 7', shell=True, executable='/bin/bash', timeout=10)")
			if !strings.Contains(out, "CompletedProcess") && !strings.Contains(out, "TimeoutExpired") {
				t.Errorf("the bombing cell did not finish: %q", tail(out, 300))
			}
			sb.siblingAlive(t, sibling)
			sb.usableAfter(t)
			// A balloon of 3 GiB in the interpreter (2 GiB sandbox): on
			// runsc the kernel is a process restored from the template's
			// memory snapshot, contained by the guest memory cgroup too.
			out = sb.runCode(t, "b = bytearray(3072 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint(len(b))")
			if !strings.Contains(out, "DeadKernelError") {
				t.Errorf("the balloon cell did not end with a dead kernel: %q", tail(out, 300))
			}
			if out := sb.runCode(t, "print(6 * 7)"); !strings.Contains(out, `"42\n"`) {
				t.Errorf("a fresh kernel does not answer after the balloon: %q", tail(out, 300))
			}
			sb.siblingAlive(t, sibling)
			sb.usableAfter(t)
		})
	}
}

// runCode runs code in the sandbox's default python context (POST /execute
// on the code interpreter's port) and returns the streamed answer.
func (s *sandbox) runCode(t *testing.T, code string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"code": code})
	req, _ := http.NewRequest("POST", s.d.url+"/execute", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("E2b-Sandbox-Id", s.ID)
	req.Header.Set("E2b-Sandbox-Port", "49999")
	req.Header.Set("X-Access-Token", s.Token)
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("execute: %d %s", resp.StatusCode, out)
	}
	return string(out)
}
