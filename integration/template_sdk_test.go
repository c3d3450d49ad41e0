package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// buildReady starts a build of name with spec and waits for it to end
// ready; its status otherwise fails t.
func (d *daemon) buildReady(t *testing.T, name string, spec map[string]any) (tid string, st buildStatus) {
	t.Helper()
	tid, bid := d.startBuild(t, name, spec)
	st = d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "ready" {
		t.Fatalf("build of %s: %+v", name, st)
	}
	return tid, st
}

// A COPY step without a user (the SDK's copy() with no options sends "")
// is owned by the user steps run as then, as E2B's COPY defaults its owner
// to the build's current user: `user` by default, root after setUser('root').
// Before, every such copy was root's, and a team's app dir was not its user's.
func TestTemplateCopyOwner(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	var req struct{ TemplateID, BuildID string }
	if code := d.api("POST", "/v3/templates", map[string]any{"name": "it-copy-owner"}, &req); code != 202 {
		t.Fatalf("request build: %d", code)
	}
	content := "conf " + time.Now().String() // never cached
	sum := sha256.Sum256([]byte(content))
	hash := hex.EncodeToString(sum[:])
	d.uploadAs(t, apiKey, req.TemplateID, hash, tarOf(t, "app.conf", content))
	spec := map[string]any{"fromTemplate": "base", "steps": []map[string]any{
		{"type": "COPY", "args": []string{"app.conf", "/home/user/app.conf", "", ""}, "filesHash": hash},
		{"type": "COPY", "args": []string{"app.conf", "/opt/given.conf", "root", "0600"}, "filesHash": hash},
		{"type": "USER", "args": []string{"root"}},
		{"type": "COPY", "args": []string{"app.conf", "/opt/root.conf", "", ""}, "filesHash": hash},
	}}
	if code := d.api("POST", "/v2/templates/"+req.TemplateID+"/builds/"+req.BuildID, spec, nil); code != 202 {
		t.Fatalf("start build: %d", code)
	}
	st := d.waitStatus(t, req.TemplateID, req.BuildID, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "ready" {
		t.Fatalf("build: %+v", st)
	}
	sb := d.create(map[string]any{"templateID": "it-copy-owner"})
	out, _ := sb.run("root", "stat -c '%U:%G %a' /home/user/app.conf /opt/given.conf /opt/root.conf", 20*time.Second)
	if want := "user:user 644\nroot:root 600\nroot:root 644\n"; out != want {
		t.Fatalf("owners: %q, want %q", out, want)
	}
}

// A template built on a template with a start command, setting none of its
// own, keeps the parent's start and ready commands, as E2B (its finalize
// phase takes the base template's start metadata): its sandboxes serve at
// create, on runsc from the child's own snapshot and on crun started at
// create. A grandchild that sets a ready command alone has that one (E2B's
// setReadyCmd): the build waits for it and the parent's server is not
// started. Before, a child lost the start command and a ready command alone
// was ignored.
func TestTemplateStartInherited(t *testing.T) {
	requirements(t, "runsc", "crun")
	d := startDaemon(t, "runsc", "")
	d.buildReady(t, "it-start-parent", map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{"mkdir -p /srv && echo parent > /srv/index.html && chown user /srv", "root"}},
			{"type": "WORKDIR", "args": []string{"/srv"}}},
		"startCmd": "echo $(id -un) $(pwd) > ctx.txt; exec python3 -m http.server 8000", "readyCmd": "curl -sf http://localhost:8000/ >/dev/null"})
	// the child's own USER and WORKDIR are not the inherited start command's
	_, st := d.buildReady(t, "it-start-child", map[string]any{"fromTemplate": "it-start-parent",
		"steps": []map[string]any{{"type": "RUN", "args": []string{"echo child > /srv/child.html", "root"}},
			{"type": "USER", "args": []string{"root"}}, {"type": "WORKDIR", "args": []string{"/tmp"}}}})
	if !logHas(st, "start command of the base template it-start-parent kept") {
		t.Fatalf("the child's build does not say it keeps the start command: %+v", st)
	}
	for _, rt := range []string{"runsc", "crun"} {
		sb := d.create(map[string]any{"templateID": "it-start-child", "runtime": rt})
		if out, _ := sb.run("", "curl -s http://localhost:8000/child.html; cat /srv/ctx.txt; whoami; pwd", 20*time.Second); out != "child\nuser /srv\nroot\n/tmp\n" {
			t.Fatalf("%s: the child's sandbox does not serve the parent's start command as the parent's user in its workdir: %q", rt, out)
		}
	}
	_, st = d.buildReady(t, "it-start-ready", map[string]any{"fromTemplate": "it-start-child",
		"readyCmd": "test -f /srv/child.html"})
	if !logHas(st, "no start command; waiting for: test -f /srv/child.html") {
		t.Fatalf("the ready command alone was not waited for: %+v", st)
	}
	sb := d.create(map[string]any{"templateID": "it-start-ready", "runtime": "crun"})
	if out, code := sb.run("", "curl -s http://localhost:8000/ || echo no server", 20*time.Second); code != 0 || !strings.Contains(out, "no server") {
		t.Fatalf("a ready command alone started the parent's server: %q (%d)", out, code)
	}
}

// A ready command that takes longer than 10 s to pass (the SDK's
// waitForTimeout(20_000), which its fromDockerfile gives every CMD, is
// `sleep 20`) passes, at build and at create, as on E2B. Before, each run
// of it was cut at 10 s and such a template never built.
func TestTemplateSlowReadyCommand(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	d.buildReady(t, "it-slow-ready", map[string]any{"fromTemplate": "base",
		"startCmd": "echo started > /tmp/started; sleep infinity", "readyCmd": "sleep 11"})
	t0 := time.Now()
	sb := d.create(map[string]any{"templateID": "it-slow-ready"})
	if took := time.Since(t0); took < 11*time.Second {
		t.Fatalf("the create answered after %s, before its ready command could pass", took)
	}
	if out, _ := sb.run("", "cat /tmp/started", 20*time.Second); out != "started\n" {
		t.Fatalf("start command: %q", out)
	}
}

// A start command that fails fails the build at once, whatever its ready
// command (E2B's finalize cancels the ready command and reports the start
// command's error): `./missing` with waitForTimeout(10_000), `sleep 10`,
// which passes, failed nothing before. One that exits 0 (a daemon that
// forks) leaves the ready command to decide, as on E2B; before, its exit
// failed the build.
func TestTemplateStartEnds(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	t0 := time.Now()
	tid, bid := d.startBuild(t, "it-start-fails", map[string]any{"fromTemplate": "base",
		"startCmd": "./missing", "readyCmd": "sleep 10"})
	st := d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "error" || st.Reason == nil || !strings.Contains(st.Reason.Message, "exited with code 127") || st.Reason.Step != "finalize" {
		t.Fatalf("a start command that fails: %+v", st)
	}
	if took := time.Since(t0); took > 9*time.Second {
		t.Fatalf("the failure took %s: the ready command was waited for", took)
	}
	d.buildReady(t, "it-start-forks", map[string]any{"fromTemplate": "base",
		"startCmd": "nohup sh -c 'sleep 1; touch /tmp/up; exec sleep infinity' >/dev/null 2>&1 & exit 0", "readyCmd": "test -f /tmp/up"})
	sb := d.create(map[string]any{"templateID": "it-start-forks"})
	if out, _ := sb.run("", "test -f /tmp/up && echo up", 20*time.Second); out != "up\n" {
		t.Fatalf("a forking start command: %q", out)
	}
}
