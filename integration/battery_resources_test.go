package integration

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// resourceAttack exhausts one shared resource from inside a sandbox created
// with opts; fn asserts the outcome expected on backend rt.
type resourceAttack struct {
	name string
	opts map[string]any
	fn   func(t *testing.T, sb *sandbox, rt string)
}

var resourceAttacks = []resourceAttack{
	{"fork-bomb", nil, forkBomb},
	{"thread-bomb", nil, threadBomb},
	{"memory-balloon", map[string]any{"memoryMB": 128}, memoryBalloon},
	{"disk-fill", map[string]any{"diskSizeMB": 64}, diskFill},
	{"inode-fill", map[string]any{"diskSizeMB": 64}, inodeFill},
	{"tmp-fill", map[string]any{"diskSizeMB": 64, "memoryMB": 256}, tmpFill},
	{"cpu-spin", nil, cpuSpin},
	{"timeout-evasion", nil, timeoutEvasion},
	{"double-fork-daemon", nil, doubleForkDaemon},
	{"stdout-flood", nil, stdoutFlood},
	{"fd-exhaustion", nil, fdExhaustion},
	{"exec-flood", nil, execFlood},
	{"console-flood", nil, consoleFlood},
	{"host-setuid", nil, hostSetuid},
}

// pidsCurrent reads the sandbox's host pids cgroup (-1 when absent).
func pidsCurrent(id string) int {
	for _, p := range []string{"/sys/fs/cgroup/pids/sbx/" + id + "/pids.current", "/sys/fs/cgroup/sbx/" + id + "/pids.current"} {
		if b, err := os.ReadFile(p); err == nil {
			n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return n
		}
	}
	return -1
}

// hostPidsLimit is the host pids cgroup's limit of a default sandbox (512
// tasks) on runtime rt (runsc: room for the Sentry's threads too).
func hostPidsLimit(rt string) int { return int(runtime.HostPids(rt, 512)) }

// forkBomb: the pids limit (512 by default) holds on the host while the
// bomb runs; the agent keeps answering (crun: the pids cgroup; runsc:
// RLIMIT_NPROC on every command, from the sandbox's memory); the sandbox
// can be deleted.
func forkBomb(t *testing.T, sb *sandbox, rt string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		sb.runErr("", "bomb() { bomb | bomb & }; bomb; sleep 8", 8*time.Second)
	}()
	peak := 0
	for i := 0; i < 40; i++ {
		peak = max(peak, pidsCurrent(sb.ID))
		time.Sleep(200 * time.Millisecond)
	}
	<-done
	if limit := hostPidsLimit(rt); peak > limit {
		t.Errorf("pids.current reached %d > %d", peak, limit)
	}
	t.Logf("fork bomb: host pids.current peak %d, agent healthy %v", peak, sb.agentHealthy())
	if !sb.agentHealthy() {
		t.Error("agent stopped answering during a fork bomb")
	}
}

// threadBomb: threads count against the same pids limit.
func threadBomb(t *testing.T, sb *sandbox, rt string) {
	out, _, _ := sb.runErr("", `python3 -c '
import threading, time
n = 0
try:
    while n < 100000:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        n += 1
except Exception as e:
    print("stopped", n, type(e).__name__)
'`, 30*time.Second)
	t.Logf("thread bomb: %q, host pids.current %d", strings.TrimSpace(out), pidsCurrent(sb.ID))
	if strings.Contains(out, "stopped 100000") {
		t.Errorf("100000 threads started: no limit")
	}
	if n, limit := pidsCurrent(sb.ID), hostPidsLimit(rt); n > limit {
		t.Errorf("pids.current %d > %d", n, limit)
	}
}

// memoryBalloon: a 400 MiB allocation under a 128 MiB limit fails and the
// sandbox lives on. crun: the kernel OOM-kills the process; runsc: the
// agent's oomguard kills it before the host cgroup would kill the Sentry
// (docs/SECURITY.md).
func memoryBalloon(t *testing.T, sb *sandbox, rt string) {
	out, code, err := sb.runErr("", "python3 -c 'b = bytearray(400 << 20); print(len(b))'", 60*time.Second)
	if err == nil && code == 0 {
		t.Fatalf("400 MiB allocation succeeded under a 128 MiB limit: %q", out)
	}
	if out, _ := sb.run("", "echo alive", 20*time.Second); out != "alive\n" {
		t.Fatalf("sandbox dead after OOM: %q", out)
	}
}

// waitGone waits until the daemon no longer lists the sandbox.
func waitGone(t *testing.T, sb *sandbox, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for sb.d.api("GET", "/sandboxes/"+sb.ID, nil, nil) != 404 {
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s not reaped within %v", sb.ID, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// diskFill: writes past the 64 MiB quota fail with ENOSPC; the sandbox
// stays usable once the file is removed.
func diskFill(t *testing.T, sb *sandbox, rt string) {
	out, _ := sb.run("", "dd if=/dev/zero of=$HOME/fill bs=1M count=200 2>&1; rm -f $HOME/fill; echo after > $HOME/ok && cat $HOME/ok", 60*time.Second)
	if !strings.Contains(out, "No space left") || !strings.HasSuffix(out, "after\n") {
		t.Errorf("disk quota: %q", out)
	}
}

// inodeFill: empty files are bounded by the layer's inode cap (16384 for
// layers up to 1 GiB), not by host kernel memory.
func inodeFill(t *testing.T, sb *sandbox, rt string) {
	out, _ := sb.run("", `python3 -c '
import os
os.makedirs(os.path.expanduser("~/i"), exist_ok=True)
n = 0
try:
    while n < 200000:
        open(os.path.expanduser("~/i/%d" % n), "w").close()
        n += 1
except OSError as e:
    print("stopped", n, e.errno)
'; rm -rf ~/i; echo cleaned`, 3*time.Minute)
	f := strings.Fields(out)
	if len(f) < 3 || f[0] != "stopped" || f[2] != "28" {
		t.Fatalf("inode fill did not end with ENOSPC: %q", out)
	}
	if n, _ := strconv.Atoi(f[1]); n > 20000 {
		t.Errorf("%d files created: inode cap not enforced", n)
	}
	t.Logf("inode fill: %q", strings.TrimSpace(out))
}

// tmpFill: /tmp is bounded too. crun: it is on the writable layer (ENOSPC
// at the disk quota). runsc: gVisor mounts its own memory-backed tmpfs at
// /tmp, so the sandbox's memory limit bounds it: the Sentry refuses memory
// past it, the write fails (or dd is killed) and the sandbox lives on. The
// file is truncated by the shell itself: with the memory full, starting rm
// may fail (exec's ENOMEM, as on a machine).
func tmpFill(t *testing.T, sb *sandbox, rt string) {
	out, _, err := sb.runErr("", "dd if=/dev/zero of=/tmp/fill bs=1M count=1024 2>&1; : >/tmp/fill; rm -f /tmp/fill", 2*time.Minute)
	if strings.Contains(out, "1073741824 bytes") {
		t.Fatalf("1 GiB written to /tmp of a sandbox with 64 MiB disk and 256 MiB memory: %q", out)
	}
	switch {
	case rt == "crun" && !strings.Contains(out, "No space left"):
		t.Errorf("/tmp fill on crun: %q %v, want ENOSPC", out, err)
	case rt == "runsc": // the Sentry refuses memory past the limit (20-sentry-memory-limit.patch): dd fails or dies inside
		if alive, code, err := sb.runErr("", "echo alive", 20*time.Second); err != nil || code != 0 || alive != "alive\n" {
			t.Errorf("sandbox unusable after a /tmp fill: %q %d %v", alive, code, err)
		}
	}
	t.Logf("/tmp fill: %q %v", strings.TrimSpace(out), err)
}

// cpuSpin: four spinners for 8 s; the sandbox's CPU quota (1 CPU) keeps the
// canary responsive.
func cpuSpin(t *testing.T, sb *sandbox, rt string) {
	out, code := sb.run("", "for i in 1 2 3 4; do timeout 8 sh -c 'while :; do :; done' & done; wait; echo spun", 60*time.Second)
	if code != 0 || out != "spun\n" {
		t.Errorf("cpu spin: %d %q", code, out)
	}
}

// timeoutEvasion: a process ignoring SIGTERM still ends at its deadline
// (group SIGKILL) and leaves nothing running.
func timeoutEvasion(t *testing.T, sb *sandbox, rt string) {
	t0 := time.Now()
	_, _, err := sb.runErr("", "trap '' TERM INT HUP; sleep 600 & sleep 600; wait", 2*time.Second)
	if err == nil || time.Since(t0) > 10*time.Second {
		t.Errorf("process ignoring TERM: err %v after %v, want deadline_exceeded at ~2 s", err, time.Since(t0))
	}
	if out, _ := sb.run("root", "ps -eo args | grep -c '^sleep 600' || true", 20*time.Second); strings.TrimSpace(out) != "0" {
		t.Errorf("%s processes survived their deadline", strings.TrimSpace(out))
	}
}

// doubleForkDaemon: a process that leaves its group (setsid, double fork,
// ignores TERM/HUP) outlives its command, as E2B background processes do,
// but never the sandbox: after the delete nothing of it runs on the host.
func doubleForkDaemon(t *testing.T, sb *sandbox, rt string) {
	out, code := sb.run("", `(setsid sh -c 'trap "" TERM HUP; exec sleep 31337' >/dev/null 2>&1 &); sleep 0.5; ps -eo args | grep -c '^sleep 31337'`, 20*time.Second)
	if code != 0 || strings.TrimSpace(out) != "1" {
		t.Fatalf("daemonized sleeper not running: %d %q", code, out)
	}
	if code := sb.d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, _ := exec.Command("sh", "-c", "ps -eo args | grep -c '^sleep 31337' || true").Output()
		if strings.TrimSpace(string(ps)) == "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemonized process survived the sandbox on the host")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// countingWriter counts bytes and remembers whether all of them were want.
type countingWriter struct {
	n     int64
	other int64
	want  byte
}

func (w *countingWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b != w.want {
			w.other++
		}
	}
	w.n += int64(len(p))
	return len(p), nil
}

// stdoutFlood: 256 MiB without a newline (64 MiB on the slower runsc), 32
// MiB of NUL bytes and ANSI escape garbage arrive complete (the Start stream
// is lossless) while the daemon's memory stays far below what passed
// through it.
func stdoutFlood(t *testing.T, sb *sandbox, rt string) {
	big := int64(256 << 20)
	if rt == "runsc" {
		big = 64 << 20
	}
	floods := []struct {
		cmd  string
		size int64
		want byte
	}{
		{fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", big), big, 'a'},
		{"head -c 33554432 /dev/zero", 32 << 20, 0},
	}
	for _, f := range floods {
		w := &countingWriter{want: f.want}
		t0 := time.Now()
		code, err := sb.exec(procReq{cmd: f.cmd, timeout: 5 * time.Minute}, w)
		if err != nil || code != 0 || w.n != f.size || w.other != 0 {
			t.Errorf("flood %q: exit %d err %v, got %d bytes (%d unexpected), want %d", f.cmd, code, err, w.n, w.other, f.size)
		}
		t.Logf("flood %q: %d MiB in %v, daemon RSS %d MiB", f.cmd, w.n>>20, time.Since(t0), rssMiB(sb.d.cmd.Process.Pid))
	}
	code, err := sb.exec(procReq{cmd: "for i in $(seq 2000); do printf '\\033[2J\\033[H\\033]0;title\\007\\033[6n\\x1b[?1049h'; done; head -c 4194304 /dev/urandom", timeout: time.Minute}, io.Discard)
	if err != nil || code != 0 {
		t.Errorf("ANSI/binary flood: %d %v", code, err)
	}
	if rss := rssMiB(sb.d.cmd.Process.Pid); rss > 200 {
		t.Errorf("daemon RSS %d MiB after the floods: output is buffered, not streamed", rss)
	}
}

func rssMiB(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb >> 10
		}
	}
	return 0
}

// fdExhaustion: files and sockets stop at RLIMIT_NOFILE (EMFILE) and the
// sandbox goes on working.
func fdExhaustion(t *testing.T, sb *sandbox, rt string) {
	out, _ := sb.run("", `python3 -c '
import socket
for kind in ("file", "socket"):
    held = []
    try:
        while len(held) < 1000000:
            held.append(open("/dev/null") if kind == "file" else socket.socket())
    except OSError as e:
        print(kind, len(held), e.errno)
    for h in held:
        h.close()
'; echo alive`, 2*time.Minute)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[2] != "alive" {
		t.Fatalf("fd exhaustion: %q", out)
	}
	for _, l := range lines[:2] {
		f := strings.Fields(l)
		n, _ := strconv.Atoi(f[1])
		if f[2] != "24" || n > 1<<16 {
			t.Errorf("%s exhaustion ended with %q, want EMFILE (24) at the rlimit", f[0], l)
		}
	}
	t.Logf("fd exhaustion: %q", out)
}

// execFlood: 64 concurrent execs all complete and the sandbox answers after.
func execFlood(t *testing.T, sb *sandbox, rt string) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	fails := 0
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, code, err := sb.runErr("", "echo x", time.Minute); err != nil || code != 0 || out != "x\n" {
				mu.Lock()
				fails++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if fails > 0 {
		t.Errorf("%d of 64 concurrent execs failed", fails)
	}
	if out, _ := sb.run("", "echo alive", 20*time.Second); out != "alive\n" {
		t.Errorf("sandbox unusable after an exec flood: %q", out)
	}
}

// consoleFlood: root in the sandbox writes into the agent's stdout and
// stderr through /proc/1/fd/1 and /proc/1/fd/2. The runtime opened them on
// the sandbox's console log, a host file; the agent points them at
// /dev/null once it listens, so the host file must not grow.
func consoleFlood(t *testing.T, sb *sandbox, rt string) {
	log := filepath.Join(sb.d.dataDir, "run", "runtime", "bundles-"+rt, sb.ID, "console.log")
	before, err := os.Stat(log)
	if err != nil {
		t.Fatalf("console log: %v", err)
	}
	out, _ := sb.run("root", "for fd in 1 2; do dd if=/dev/zero of=/proc/1/fd/$fd bs=1M count=8 oflag=append conv=notrunc 2>&1 | tail -n1; done", time.Minute)
	after, err := os.Stat(log)
	if err != nil {
		t.Fatalf("console log: %v", err)
	}
	if after.Size() > before.Size()+4096 {
		t.Errorf("the sandbox wrote %d bytes into its host console log (%s)", after.Size()-before.Size(), out)
	}
}
