package builder

import (
	"context"
	"errors"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/template"
)

// TestRegistryBuildingIsUnavailable: a built-in that is not there is not
// found, unless a process is building it: then it is unavailable (503),
// for its bare name and :latest only.
func TestRegistryBuildingIsUnavailable(t *testing.T) {
	dir := t.TempDir()
	r := &Registry{Builtins: &template.Store{Dir: dir}}
	const name = "code-interpreter-v1"
	if _, err := r.Get(name); errors.Is(err, sandbox.ErrUnavailable) || err == nil {
		t.Fatalf("Get before a build = %v, want not found", err)
	}
	done, err := template.MarkBuilding(context.Background(), dir, name)
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]bool{name: true, name + ":latest": true, name + ":v2": false, "base": false, "mine": false} {
		if _, err := r.Get(ref); errors.Is(err, sandbox.ErrUnavailable) != want {
			t.Errorf("Get(%q) while %s builds = %v; unavailable want %v", ref, name, err, want)
		}
	}
	done()
	if _, err := r.Get(name); errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("Get after the build ended = %v, want not found", err)
	}
}
