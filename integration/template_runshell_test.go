package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A RUN step runs with bash, as on E2B (its build server runs each with
// `/bin/bash -l -c`): `[[ ]]`, `set -o pipefail`, arithmetic powers and
// brace expansion work, and an ENV step's PATH still reaches it. Before, a
// RUN ran with /bin/sh (dash on Debian) and failed on each of them.
func TestBuildRunIsBash(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	run := `[[ -n "$BASH_VERSION" ]] && set -o pipefail && echo "bash $((2**3)) $(echo {a,b}) $PATH" # ` +
		strconv.FormatInt(time.Now().UnixNano(), 36) // never cached
	tid, bid := d.startBuild(t, "it-runbash", map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "ENV", "args": []string{"PATH", "/opt/tools:$PATH"}}, {"type": "RUN", "args": []string{run, "root"}}}})
	st := d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "ready" {
		t.Fatalf("build: %+v", st)
	}
	for _, e := range st.LogEntries {
		if strings.HasPrefix(e.Message, "bash 8 a b /opt/tools:") {
			return
		}
	}
	t.Fatalf("no `bash 8 a b /opt/tools:...` line: %+v", st.LogEntries)
}
