package integration

import (
	"testing"
)

// TestTeamsBuiltinNames: the built-in templates' names are reserved even
// on a node where a built-in is not built (yet): a team that could take
// "code-interpreter-v1" there would own the template every other team's
// code-interpreter SDK starts (made public) once the operator builds the
// built-in, since a team's template name resolves first.
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
