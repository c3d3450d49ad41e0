package integration

import (
	"testing"
	"time"
)

// A start command a child inherits runs with its parent's env, as E2B's
// (its finalize phase runs the base template's start metadata, whose
// context holds the base's env vars), not with the child's: a child's
// ENV PORT=9000 does not move its parent's server off 8000. Before, the
// inherited command took the child's env.
func TestTemplateStartInheritedEnv(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	d.buildReady(t, "it-startenv-parent", map[string]any{"fromTemplate": "base",
		"steps":    []map[string]any{{"type": "ENV", "args": []string{"PORT", "8000"}}},
		"startCmd": "echo $PORT > /tmp/port; exec python3 -m http.server $PORT", "readyCmd": "curl -sf http://localhost:8000/ >/dev/null"})
	d.buildReady(t, "it-startenv-child", map[string]any{"fromTemplate": "it-startenv-parent",
		"steps": []map[string]any{{"type": "ENV", "args": []string{"PORT", "9000"}}}})
	sb := d.create(map[string]any{"templateID": "it-startenv-child"})
	if out, _ := sb.run("", "cat /tmp/port; echo $PORT", 20*time.Second); out != "8000\n9000\n" {
		t.Fatalf("the inherited start command's PORT, then the child's sandbox's: %q, want the parent's then the child's", out)
	}
}
