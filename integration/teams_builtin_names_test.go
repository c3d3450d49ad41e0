package integration

import (
	"testing"
)

// TestTeamsBuiltinNames: the built-in templates' names are reserved for
// every team even on a node where a built-in is not built (yet). Names are
// per team and a team's own name resolves before a built-in's, so a team
// holding "code-interpreter-v1" would silently swap in its own template
// under every one of its code-interpreter SDK's creates, and nothing would
// show it once the operator builds the built-in; the refusal says so at
// the build instead.
func TestTeamsBuiltinNames(t *testing.T) {
	d := startDaemon(t, "runsc", "", "--templates-dir", baseCopy(t)) // base only
	tm := d.newTeam("squatter", nil)
	for _, name := range []string{"code-interpreter-v1", "code-interpreter-v1:latest", "base"} {
		if c, _, body := d.call("POST", "/v3/templates", map[string]string{"X-API-Key": tm.Key}, map[string]any{"name": name}); c != 409 {
			t.Errorf("a team asks for the built-in name %q: %d %s, want 409", name, c, body)
		}
	}
	if c, _, body := d.call("POST", "/v3/templates", map[string]string{"X-API-Key": apiKey}, map[string]any{"name": "code-interpreter-v1"}); c != 409 {
		t.Errorf("the admin asks for the built-in name: %d %s, want 409", c, body)
	}
}
