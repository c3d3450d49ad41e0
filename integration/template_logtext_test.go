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
