package integration

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildStatus is the part of E2B's TemplateBuildInfo the tests read.
type buildStatus struct {
	Status     string `json:"status"`
	LogEntries []struct {
		Level   string `json:"level"`
		Message string `json:"message"`
	} `json:"logEntries"`
	Reason *struct {
		Message string `json:"message"`
		Step    string `json:"step"`
	} `json:"reason"`
}

// startBuild requests a build of name and starts it with spec.
func (d *daemon) startBuild(t *testing.T, name string, spec map[string]any) (tid, bid string) {
	t.Helper()
	var req struct{ TemplateID, BuildID string }
	if code := d.api("POST", "/v3/templates", map[string]any{"name": name}, &req); code != 202 {
		t.Fatalf("request build: %d", code)
	}
	if code := d.api("POST", "/v2/templates/"+req.TemplateID+"/builds/"+req.BuildID, spec, nil); code != 202 {
		t.Fatalf("start build: %d", code)
	}
	return req.TemplateID, req.BuildID
}

// waitStatus polls a build until done(status) or the bound.
func (d *daemon) waitStatus(t *testing.T, tid, bid string, bound time.Duration, done func(buildStatus) bool) buildStatus {
	t.Helper()
	var st buildStatus
	for end := time.Now().Add(bound); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		st = buildStatus{}
		if code := d.api("GET", "/templates/"+tid+"/builds/"+bid+"/status", nil, &st); code != 200 {
			t.Fatalf("status: %d", code)
		}
		if done(st) {
			return st
		}
	}
	t.Fatalf("build %s: not done within %s: %+v", bid, bound, st)
	return st
}

func logHas(st buildStatus, s string) bool {
	for _, e := range st.LogEntries {
		if strings.Contains(e.Message, s) {
			return true
		}
	}
	return false
}

// A daemon killed while a step runs: after the restart the build is failed
// (never half-usable), the host is back at its baseline (the build sandbox,
// its layer and network, the layer being written are gone), and the same
// template builds and serves sandboxes on runsc and on crun (shifted layers).
func TestTemplateBuildCrash(t *testing.T) {
	requirements(t, "runsc", "crun")
	d := startDaemon(t, "runsc", "")
	base := d.inventory()
	tid, bid := d.startBuild(t, "it-crash", map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{"sleep 120"}}}})
	d.waitStatus(t, tid, bid, time.Minute, func(st buildStatus) bool { return logHas(st, "[1] RUN") })
	time.Sleep(2 * time.Second) // the step's sandbox is up and running it
	d.stop(syscall.SIGKILL)
	d2 := startDaemon(t, "runsc", d.dataDir)
	st := d2.waitStatus(t, tid, bid, 10*time.Second, func(st buildStatus) bool { return st.Status != "building" })
	if st.Status != "error" || st.Reason == nil || !strings.Contains(st.Reason.Message, "restarted") {
		t.Fatalf("after the crash: %+v", st)
	}
	if code := d2.api("POST", "/v2/sandboxes", map[string]any{"templateID": "it-crash"}, nil); code != 404 {
		t.Fatalf("create from a template whose only build failed: %d, want 404", code)
	}
	d2.backToBaseline(t, base)

	tid, bid = d2.startBuild(t, "it-crash", map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{"echo layered > /ok", "root"}}, {"type": "ENV", "args": []string{"K", "v"}}}})
	if st := d2.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" }); st.Status != "ready" {
		t.Fatalf("rebuild: %+v", st)
	}
	for _, rt := range []string{"runsc", "crun"} {
		sb := d2.create(map[string]any{"templateID": "it-crash", "runtime": rt})
		if out, _ := sb.run("", "cat /ok; echo $K; whoami", 20*time.Second); out != "layered\nv\nuser\n" {
			t.Fatalf("%s sandbox of the template: %q", rt, out)
		}
		if code := d2.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
			t.Fatalf("delete: %d", code)
		}
	}
	if code := d2.api("DELETE", "/templates/"+tid, nil, nil); code != 204 {
		t.Fatalf("delete template: %d", code)
	}
	d2.backToBaseline(t, base)
}

// A template's start command serves as soon as the create answers: on
// runsc from the build's memory snapshot (which carries no egress CA), on
// crun started at create and awaited through the ready command; a start
// command that dies fails the build with its output.
func TestTemplateStartCommand(t *testing.T) {
	requirements(t, "runsc", "crun")
	d := startDaemon(t, "runsc", "")
	tid, bid := d.startBuild(t, "it-start", map[string]any{"fromTemplate": "base",
		"steps":    []map[string]any{{"type": "RUN", "args": []string{"mkdir -p /srv && echo served > /srv/index.html", "root"}}},
		"startCmd": "cd /srv && python3 -m http.server 8000", "readyCmd": "curl -sf http://localhost:8000/ >/dev/null"})
	st := d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "ready" || !logHas(st, "snapshot") {
		t.Fatalf("build: %+v", st)
	}
	// The snapshot's sandbox, like a step's, gets no egress CA: no
	// template's files carry the daemon's CA (before, the snapshot had it).
	var ca []string
	_ = filepath.WalkDir(filepath.Join(d.dataDir, "images"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Name() == "sbx-egress-ca.crt" {
			ca = append(ca, p)
		}
		return nil
	})
	if len(ca) > 0 {
		t.Fatalf("the template's snapshot carries the daemon's egress CA: %v", ca)
	}
	for _, rt := range []string{"runsc", "crun"} {
		sb := d.create(map[string]any{"templateID": "it-start", "runtime": rt})
		if out, _ := sb.run("", "curl -s http://localhost:8000/", 20*time.Second); out != "served\n" {
			t.Fatalf("%s: the start command does not serve right after create: %q", rt, out)
		}
	}
	tid, bid = d.startBuild(t, "it-start-dies", map[string]any{"fromTemplate": "base",
		"startCmd": "echo giving up; exit 3", "readyCmd": "false"})
	st = d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "error" || st.Reason == nil || !strings.Contains(st.Reason.Message, "giving up") || st.Reason.Step != "finalize" {
		t.Fatalf("a start command that dies: %+v", st)
	}
}

// A build step's sandbox gets E2B's ids at its /init like any sandbox (its
// agent writes them to /run/e2b); none of them may end up in the step's
// layer, nor the daemon's egress CA (build sandboxes get none: before, the
// CA file and the bundle it was appended to were in every step's layer).
// Every sandbox of the template then sees its own ids only.
func TestBuildLayerCarriesNoSandboxIDs(t *testing.T) {
	_, templates := requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	before, _ := filepath.Glob(filepath.Join(templates, "layers", "*"))
	tid, bid := d.startBuild(t, "it-noids", map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{"echo $E2B_SANDBOX_ID > /opt/built-in; ls /run/e2b/.E2B_SANDBOX_ID # " + strconv.FormatInt(time.Now().UnixNano(), 36), "root"}}}}) // never cached
	st := d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "ready" {
		t.Fatalf("build: %+v", st)
	}
	var leaked []string
	for _, rel := range []string{"run/e2b/.E2B_*", "tmp/sbx-interpreter-*", "usr/local/share/ca-certificates/sbx-egress-ca.crt", "etc/ssl/certs/ca-certificates.crt"} {
		found, _ := filepath.Glob(filepath.Join(templates, "layers", "*", "r", "fs", rel))
		for _, f := range found {
			if layer, _, _ := strings.Cut(f, "/r/fs/"); !slices.Contains(before, layer) {
				leaked = append(leaked, f) // in a layer this build made
			}
		}
	}
	if len(leaked) > 0 {
		t.Fatalf("layers carry a build sandbox's ids, its agent's interpreter drivers or the daemon's egress CA: %v", leaked)
	}
	sb := d.create(map[string]any{"templateID": "it-noids"})
	out, _ := sb.run("", "cat /opt/built-in; echo $E2B_SANDBOX_ID; cat /run/e2b/.E2B_SANDBOX_ID", 20*time.Second)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || lines[0] == "" || lines[0] == sb.ID || lines[1] != sb.ID || lines[2] != sb.ID {
		t.Fatalf("a sandbox of the template (%s) sees %q: want the build's id, then its own twice", sb.ID, out)
	}
}
