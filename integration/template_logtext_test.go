package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

// A build step's output reaches `sbx template build` and the SDK's build
// logger, which print it to a terminal: through the real daemon no escape
// sequence, CR or other control character of it stays in the build's log
// (before, an OSC 52 clipboard write and a screen clear came back as sent).
func TestBuildLogIsText(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	run := `printf 'a\033]52;c;cHduZWQ=\007b\033[2Jc\rd\200e\n' # ` + strconv.FormatInt(time.Now().UnixNano(), 36) // never cached
	tid, bid := d.startBuild(t, "it-logtext", map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{run, "root"}}}})
	st := d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "ready" {
		t.Fatalf("build: %+v", st)
	}
	found := false
	for _, e := range st.LogEntries {
		if strings.HasPrefix(e.Message, "a") && strings.HasSuffix(e.Message, "e") && strings.Contains(e.Message, "52;c;") {
			found = true
		}
		if i := strings.IndexFunc(e.Message, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }); i >= 0 {
			t.Errorf("a build log entry holds control character %q: %q", e.Message[i], e.Message)
		}
	}
	if !found {
		t.Fatalf("the step's line is not in the log: %+v", st.LogEntries)
	}
}

// A RUN step's stdout is logged at info and its stderr at error, as E2B's
// build server logs a step's streams (the SDK's onBuildLogs and its default
// logger tell them apart by level); before, both came at info.
func TestBuildStepStderrIsError(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	run := `echo to-out; echo to-err >&2 # ` + strconv.FormatInt(time.Now().UnixNano(), 36) // never cached
	tid, bid := d.startBuild(t, "it-logstreams", map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{run, "root"}}}})
	st := d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "ready" {
		t.Fatalf("build: %+v", st)
	}
	levels := map[string]string{}
	for _, e := range st.LogEntries {
		if e.Message == "to-out" || e.Message == "to-err" {
			levels[e.Message] = e.Level
		}
	}
	if levels["to-out"] != "info" || levels["to-err"] != "error" {
		t.Fatalf("levels %v, want to-out at info and to-err at error: %+v", levels, st.LogEntries)
	}
}

// A template's start command that ends before its sandbox is ready fails
// the create with the end of its output in the API's error message, which
// the CLI and the SDK show: its escape sequences arrive as text (before, an
// OSC 52 and a CR came back in the 503's message as the sandbox wrote them).
func TestStartCommandErrorIsText(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	tid, bid := d.startBuild(t, "it-start-escapes", map[string]any{"fromTemplate": "base",
		"startCmd": `if [ -n "$HOSTILE" ]; then printf 'a\033]52;c;cHduZWQ=\007b\rc\n'; exit 3; fi; touch /tmp/ready; sleep infinity`,
		"readyCmd": "test -f /tmp/ready"})
	if st := d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" }); st.Status != "ready" {
		t.Fatalf("build: %+v", st)
	}
	var e struct{ Message string }
	code := d.api("POST", "/v2/sandboxes", map[string]any{"templateID": "it-start-escapes", "envVars": map[string]string{"HOSTILE": "1"}}, &e)
	if code/100 == 2 || !strings.Contains(e.Message, "52;c;") {
		t.Fatalf("create: %d %q, want the start command's failure with its output", code, e.Message)
	}
	if i := strings.IndexFunc(e.Message, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }); i >= 0 {
		t.Fatalf("the create's error holds control character %q: %q", e.Message[i], e.Message)
	}
}
