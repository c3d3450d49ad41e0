package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// counterCmd keeps a count in shell memory and writes it out: after a
// restore the count goes on from where it was, never from 1.
const counterCmd = `nohup sh -c 'i=0; while :; do i=$((i+1)); echo $i > /home/user/n.tmp; mv /home/user/n.tmp /home/user/n; sleep 0.05; done' >/dev/null 2>&1 &`

func startCounter(t *testing.T, sb *sandbox) int {
	t.Helper()
	sb.run("", counterCmd, 20*time.Second)
	return waitCount(t, sb, 5)
}

func readCount(sb *sandbox) int {
	out, _, _ := sb.runErr("", "cat /home/user/n", 20*time.Second)
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// waitCount waits until the counter reaches n and returns it.
func waitCount(t *testing.T, sb *sandbox, n int) int {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c := readCount(sb); c >= n {
			return c
		}
	}
	t.Fatalf("counter of %s never reached %d (at %d)", sb.ID, n, readCount(sb))
	return 0
}

type info struct {
	State     string `json:"state"`
	Lifecycle struct {
		OnTimeout  string `json:"onTimeout"`
		AutoResume bool   `json:"autoResume"`
	} `json:"lifecycle"`
}

func (d *daemon) state(id string) string {
	var in info
	d.api("GET", "/sandboxes/"+id, nil, &in)
	return in.State
}

// pausedResidue fails if a paused sandbox still holds host resources.
func pausedResidue(t *testing.T, id string) {
	t.Helper()
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), id) {
		t.Errorf("paused sandbox %s still has mounts", id)
	}
	if m, _ := filepath.Glob("/run/netns/*-" + id); len(m) > 0 {
		t.Errorf("paused sandbox %s still has its netns", id)
	}
}

// TestPauseResume (runsc): memory and files survive pause, a daemon crash
// while paused, and resume; the paused sandbox holds no host resources.
func TestPauseResume(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(map[string]any{"metadata": map[string]string{"k": "v"}})
	sb.run("", "echo kept > /home/user/f", 20*time.Second)
	before := startCounter(t, sb)
	if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause: %d\n%s", code, tail(d.log.String(), 2000))
	}
	if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 409 {
		t.Fatalf("second pause: %d, want 409", code)
	}
	var listed []struct{ SandboxID string }
	d.api("GET", "/v2/sandboxes?state=paused", nil, &listed)
	if len(listed) != 1 || listed[0].SandboxID != sb.ID || d.state(sb.ID) != "paused" {
		t.Fatalf("paused list %v, state %q", listed, d.state(sb.ID))
	}
	pausedResidue(t, sb.ID)
	d.stop(syscall.SIGKILL)
	d2 := startDaemon(t, "runsc", d.dataDir)
	sb.d = d2
	t.Cleanup(func() { d2.deleteQuiet(sb.ID) }) // before d2 stops
	if st := d2.state(sb.ID); st != "paused" {
		t.Fatalf("after a restart the sandbox is %q", st)
	}
	var resp struct{ SandboxID, EnvdAccessToken string }
	if code := d2.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 60}, &resp); code != 201 {
		t.Fatalf("connect of a paused sandbox: %d, want 201\n%s", code, tail(d2.log.String(), 2000))
	}
	if resp.SandboxID != sb.ID || resp.EnvdAccessToken != sb.Token {
		t.Fatalf("resumed identity %+v", resp)
	}
	if c := waitCount(t, sb, before+5); c > before+400 {
		t.Fatalf("counter %d: ran while paused or restarted", c)
	}
	if out, _ := sb.run("", "cat /home/user/f", 20*time.Second); out != "kept\n" {
		t.Fatalf("file after resume: %q", out)
	}
	if code := d2.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 60}, nil); code != 200 {
		t.Fatalf("connect of a running sandbox: %d, want 200", code)
	}
	if code := d2.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	noResidue(t, d2, sb.ID)
	if m, _ := filepath.Glob(filepath.Join(d.dataDir, "images", "*", "*")); len(m) > 0 {
		t.Fatalf("images left: %v", m)
	}
}

// TestForkAndSnapshot (runsc): children are live copies with their own
// identity; a snapshot starts new sandboxes and is deleted through the
// SDK's DELETE /templates/{id}.
func TestForkAndSnapshot(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	src := d.create(nil)
	at := startCounter(t, src)
	var kids []struct {
		Sandbox *sandbox                  `json:"sandbox"`
		Error   *struct{ Message string } `json:"error"`
	}
	if code := d.api("POST", "/sandboxes/"+src.ID+"/fork", map[string]any{"count": 2, "timeout": 60}, &kids); code != 201 || len(kids) != 2 {
		t.Fatalf("fork: %d %+v\n%s", code, kids, tail(d.log.String(), 2000))
	}
	for _, k := range kids {
		if k.Sandbox == nil {
			t.Fatalf("fork child failed: %+v", k.Error)
		}
		c := k.Sandbox
		c.d = d
		t.Cleanup(func() { d.deleteQuiet(c.ID) })
		if c.ID == src.ID || c.Token == src.Token {
			t.Fatalf("child shares the source's identity")
		}
		waitCount(t, c, at+5)
		if _, _, err := (&sandbox{d: d, ID: c.ID, Token: src.Token}).runErr("", "true", 10*time.Second); err == nil {
			t.Fatalf("the source's token works on a child")
		}
	}
	waitCount(t, src, at+5)
	distinctRandom(t, src, kids[0].Sandbox, kids[1].Sandbox)

	var snap struct {
		SnapshotID string   `json:"snapshotID"`
		Names      []string `json:"names"`
	}
	if code := d.api("POST", "/sandboxes/"+src.ID+"/snapshots", map[string]any{"name": "it-snap"}, &snap); code != 201 {
		t.Fatalf("snapshot: %d\n%s", code, tail(d.log.String(), 2000))
	}
	from := d.create(map[string]any{"templateID": "it-snap"})
	waitCount(t, from, at+5)
	var list []struct{ SnapshotID string }
	d.api("GET", "/snapshots?sandboxID="+src.ID, nil, &list)
	if len(list) != 1 || list[0].SnapshotID != snap.SnapshotID {
		t.Fatalf("snapshots: %+v", list)
	}
	if code := d.api("DELETE", "/templates/it-snap", nil, nil); code != 204 {
		t.Fatalf("delete snapshot: %d", code)
	}
	if code := d.api("DELETE", "/templates/it-snap", nil, nil); code != 404 {
		t.Fatalf("delete deleted snapshot: %d", code)
	}
	waitCount(t, from, readCount(from)+3) // unaffected by the deletion
}

// distinctRandom fails unless every sandbox's /dev/urandom gives other
// bytes: sandboxes restored from one checkpoint restore the guest kernel's
// state, and must not restore its random state with it.
func distinctRandom(t *testing.T, sbs ...*sandbox) {
	t.Helper()
	seen := map[string]string{}
	for _, sb := range sbs {
		out, code := sb.run("", "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'", 20*time.Second)
		if code != 0 || len(out) != 64 {
			t.Fatalf("urandom of %s: %q (exit %d)", sb.ID, out, code)
		}
		if other, ok := seen[out]; ok {
			t.Fatalf("%s and %s read the same /dev/urandom bytes %s", other, sb.ID, out)
		}
		seen[out] = sb.ID
	}
}

// TestAutoPause (runsc): onTimeout pause pauses at the deadline; traffic
// resumes it when it asked for autoResume, and gets E2B's 409 otherwise.
func TestAutoPause(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	auto := d.create(map[string]any{"timeout": 4, "autoPause": true, "autoResume": map[string]bool{"enabled": true}})
	plain := d.create(map[string]any{"timeout": 2, "autoPause": true})
	auto.run("", "echo x > /home/user/x", 20*time.Second)
	for deadline := time.Now().Add(20 * time.Second); d.state(auto.ID) != "paused" || d.state(plain.ID) != "paused"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not paused at the deadline: %s %s", d.state(auto.ID), d.state(plain.ID))
		}
	}
	if _, _, err := plain.runErr("", "true", 10*time.Second); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("traffic to a paused sandbox without autoResume: %v, want 409", err)
	}
	if out, _ := auto.run("", "cat /home/user/x", 20*time.Second); out != "x\n" {
		t.Fatalf("auto-resumed sandbox: %q", out)
	}
	if st := d.state(auto.ID); st != "running" {
		t.Fatalf("after traffic: %s", st)
	}
}

// TestPauseQuota: past --image-quota-mb pause is refused (507) and the
// sandbox keeps running.
func TestPauseQuota(t *testing.T) {
	d := startDaemon(t, "runsc", "", "--image-quota-mb", "1")
	sb := d.create(nil)
	if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 507 {
		t.Fatalf("pause past the quota: %d, want 507", code)
	}
	if out, _ := sb.run("", "echo alive", 20*time.Second); out != "alive\n" || d.state(sb.ID) != "running" {
		t.Fatalf("sandbox after a refused pause: %q %s", out, d.state(sb.ID))
	}
}

// TestPauseWithoutCheckpoint (crun): memory pause and fork are 501; a
// files-only pause keeps the files and restarts the processes; onTimeout
// pause falls back to that.
func TestPauseWithoutCheckpoint(t *testing.T) {
	d := startDaemon(t, "crun", "")
	sb := d.create(nil)
	for _, p := range []string{"/pause", "/fork", "/snapshots"} {
		var e struct{ Code int }
		if code := d.api("POST", "/sandboxes/"+sb.ID+p, nil, &e); code != 501 || e.Code != 501 {
			t.Fatalf("%s on crun: %d %+v, want 501", p, code, e)
		}
	}
	sb.run("", "echo kept > /home/user/f; sleep 1000 &", 20*time.Second)
	if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", map[string]bool{"memory": false}, nil); code != 204 {
		t.Fatalf("files-only pause: %d", code)
	}
	pausedResidue(t, sb.ID)
	if code := d.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 60}, nil); code != 201 {
		t.Fatalf("resume: %d\n%s", code, tail(d.log.String(), 2000))
	}
	if out, _ := sb.run("", "cat /home/user/f; pgrep -c sleep || true", 20*time.Second); out != "kept\n0\n" {
		t.Fatalf("after a files-only resume: %q (want the file, no old process)", out)
	}
	auto := d.create(map[string]any{"timeout": 2, "autoPause": true})
	for deadline := time.Now().Add(20 * time.Second); d.state(auto.ID) != "paused"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("crun onTimeout pause: state %s", d.state(auto.ID))
		}
	}
}

// TestConnectReboot (runsc): connect {"memory": false} (the SDK's onResume:
// "reboot") resumes a paused sandbox over its files with fresh processes.
func TestConnectReboot(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(nil)
	startCounter(t, sb)
	if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause: %d", code)
	}
	if code := d.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 60, "memory": false}, nil); code != 201 {
		t.Fatalf("reboot: %d\n%s", code, tail(d.log.String(), 2000))
	}
	out, _ := sb.run("", "test -s /home/user/n && echo file; pgrep -c -f '[n].tmp' || true", 20*time.Second)
	if out != "file\n0\n" {
		t.Fatalf("after a reboot: %q (want the file, no counter)", out)
	}
}

// TestPauseCrash (runsc): a daemon killed in the middle of a pause loses
// nothing. Before the record says paused: after the restart the sandbox
// runs on (thawed). After it: the sandbox is paused, the host resources the
// dead daemon still held are released, and it resumes.
func TestPauseCrash(t *testing.T) {
	for _, tc := range []struct{ point, want string }{
		{"pause/before-record", "running"},
		{"pause/before-release", "paused"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			t.Setenv("SBX_FAILPOINTS", tc.point+"=kill")
			d := startDaemon(t, "runsc", "")
			sb := d.create(nil)
			at := startCounter(t, sb)
			req, _ := http.NewRequest("POST", d.url+"/sandboxes/"+sb.ID+"/pause", nil)
			req.Header.Set("X-API-Key", apiKey)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("pause answered %d; the failpoint should have killed the daemon", resp.StatusCode)
			}
			d.stop(syscall.SIGKILL)
			t.Setenv("SBX_FAILPOINTS", "")
			d2 := startDaemon(t, "runsc", d.dataDir)
			sb.d = d2
			t.Cleanup(func() { d2.deleteQuiet(sb.ID) }) // before d2 stops
			if st := d2.state(sb.ID); st != tc.want {
				t.Fatalf("after the crash and a restart: %q, want %q\n%s", st, tc.want, tail(d2.log.String(), 2000))
			}
			if tc.want == "paused" {
				pausedResidue(t, sb.ID)
				if code := d2.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 60}, nil); code != 201 {
					t.Fatalf("resume: %d", code)
				}
			}
			waitCount(t, sb, at+5)
			if m, _ := filepath.Glob(filepath.Join(d.dataDir, "images", "paused", "*")); len(m) > 0 {
				t.Errorf("images left: %v", m)
			}
			if code := d2.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
				t.Fatalf("delete: %d", code)
			}
			noResidue(t, d2, sb.ID)
		})
	}
}
