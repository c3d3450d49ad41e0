package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// createSteps and deleteSteps are the failpoints (internal/failpoint) on the
// create and delete paths, in order.
var (
	createSteps = []string{"create/before-runtime", "create/after-runtime", "create/before-init", "create/before-record"}
	deleteSteps = []string{"delete/before-layer", "delete/before-network"}
)

// TestCrashAtEveryStep kills the daemon (SIGKILL, through SBX_FAILPOINTS
// "kill") at each step of create and delete, restarts it without failpoints
// and checks that the sandbox is fully gone, the host inventory is back at
// its baseline and the node still creates working sandboxes.
func TestCrashAtEveryStep(t *testing.T) {
	for _, rt := range []string{"crun", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			requirements(t, rt)
			dataDir := newDataDir(t) // outlives the steps, which share it
			for _, step := range append(append([]string{}, createSteps...), deleteSteps...) {
				t.Run(strings.ReplaceAll(step, "/", "-"), func(t *testing.T) { crashAt(t, rt, dataDir, step) })
			}
		})
	}
}

// crashAt runs one crash-and-restart round on dataDir.
func crashAt(t *testing.T, rt, dataDir, step string) {
	d := startDaemonEnv(t, rt, dataDir, []string{"SBX_FAILPOINTS=" + step + "=kill"})
	base := d.inventory()
	var known []string
	if strings.HasPrefix(step, "delete/") {
		sb := d.create(nil)
		known = append(known, sb.ID)
		if _, err := d.tryAPI("DELETE", "/sandboxes/"+sb.ID, nil); err == nil {
			t.Fatalf("delete answered although the daemon should have died at %s", step)
		}
	} else if code, err := d.tryAPI("POST", "/v2/sandboxes", map[string]any{"templateID": "base"}); err == nil {
		t.Fatalf("create answered %d although the daemon should have died at %s", code, step)
	}
	d.waitKilled()
	d2 := startDaemon(t, rt, d.dataDir)
	var list []map[string]any
	if code := d2.api("GET", "/v2/sandboxes", nil, &list); code != 200 || len(list) != 0 {
		t.Fatalf("after the crash at %s: list = %d %v, want no sandbox", step, code, list)
	}
	d2.backToBaseline(t, base, known...)
	sb := d2.create(nil)
	if out, _ := sb.run("", "echo ok", 20*time.Second); out != "ok\n" {
		t.Fatalf("node unusable after the crash at %s: %q", step, out)
	}
	if code := d2.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	d2.backToBaseline(t, base, sb.ID)
	d2.stop(syscall.SIGTERM)
}

// tryAPI is api without failing the test on a transport error.
func (d *daemon) tryAPI(method, path string, body any) (int, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, d.url+path, bytes.NewReader(b))
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitKilled waits for the daemon to die of SIGKILL (a failpoint "kill").
func (d *daemon) waitKilled() {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		d.t.Fatalf("daemon still running after its failpoint:\n%s", tail(d.log.String(), 3000))
	}
	if ws, ok := d.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		d.t.Fatalf("daemon exited with %v, want SIGKILL from the failpoint:\n%s", d.cmd.ProcessState, tail(d.log.String(), 3000))
	}
}

// TestCrashWhileRunning kills the daemon while a sandbox runs: the sandbox
// keeps running through the downtime, still cannot reach the host (its
// kernel rules hold without the daemon), is re-adopted on restart, and its
// deadline (which falls after the restart) is still enforced.
func TestCrashWhileRunning(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt string) {
		d := startDaemon(t, rt, "")
		base := d.inventory()
		sb := d.create(map[string]any{"timeout": 30})
		if _, code := sb.run("", "(setsid sh -c 'while :; do date +%s >> /tmp/beat; sleep 0.5; done' >/dev/null 2>&1 &)", 20*time.Second); code != 0 {
			t.Fatal("heartbeat did not start")
		}
		startReachProbe(t, sb, hostAddrs(d))
		d.stop(syscall.SIGKILL)
		down := time.Now()
		time.Sleep(3 * time.Second)
		d2 := startDaemon(t, rt, d.dataDir)
		sb.d = d2
		out, _ := sb.run("", "awk -v t="+itoa(down.Unix()+1)+" '$1 > t' /tmp/beat | wc -l", 20*time.Second)
		if n := atoi(strings.TrimSpace(out)); n < 2 {
			t.Errorf("sandbox did not run while the daemon was down: %d beats after the crash", n)
		}
		checkReachProbe(t, sb, down)
		waitGone(t, sb, 45*time.Second)
		d2.backToBaseline(t, base, sb.ID)
	})
}

// reachProbe tries, every 0.5 s, TCP connections from the sandbox to the
// host's addresses (sshd, the daemon's port), its gateway and the cloud
// metadata address, logging "<unix time> open|closed <target>".
const reachProbe = `
import os, socket, struct, time
t = [a for a in os.environ["HOST_ADDRS"].split(",") if a] + ["169.254.169.254:80"]
for line in open("/proc/net/route").readlines()[1:]:
    f = line.split()
    if f[1] == "00000000":
        gw = socket.inet_ntoa(struct.pack("<I", int(f[2], 16)))
        t += [gw + ":22", gw + ":80", gw + ":3000"]
while True:
    for a in t:
        h, _, p = a.rpartition(":")
        s = socket.socket()
        s.settimeout(0.3)
        try:
            s.connect((h, int(p)))
            r = "open"
        except OSError:
            r = "closed"
        s.close()
        with open("/tmp/reach", "a") as f:
            f.write("%d %s %s\n" % (time.time(), r, a))
    time.sleep(0.5)
`

func startReachProbe(t *testing.T, sb *sandbox, addrs string) {
	b64 := base64.StdEncoding.EncodeToString([]byte(reachProbe))
	cmd := "echo " + b64 + " | base64 -d > /tmp/reach.py && (HOST_ADDRS=" + addrs + " setsid python3 /tmp/reach.py >/dev/null 2>&1 &)"
	if out, code := sb.run("", cmd, 20*time.Second); code != 0 {
		t.Fatalf("reach probe: %d %q", code, out)
	}
}

// checkReachProbe fails if any connection succeeded, and if none was tried
// while the daemon was down (from down on).
func checkReachProbe(t *testing.T, sb *sandbox, down time.Time) {
	out, _ := sb.run("", "awk -v t="+itoa(down.Unix())+" '$1 >= t' /tmp/reach | sort | uniq -c | sort -rn | head -3; grep -c open /tmp/reach || true", 20*time.Second)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[len(lines)-1] != "0" {
		t.Errorf("the sandbox reached the host: %q", out)
	}
	if len(lines) < 2 {
		t.Errorf("no connection tried while the daemon was down: %q", out)
	}
}
