package runtime_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoUpwardImports keeps the runtime layer below the sandbox manager:
// package runtime, its backends and its conformance suite import nothing
// of the manager, the API or the daemon's wiring (docs/ARCHITECTURE.md).
func TestNoUpwardImports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-test", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/sbx-dev/sbx/"
	for _, dep := range strings.Fields(string(out)) {
		for _, above := range []string{"internal/sandbox", "internal/api", "internal/builder", "internal/proxy", "cmd/"} {
			if strings.HasPrefix(dep, mod+above) {
				t.Errorf("internal/runtime/... depends on %s", dep)
			}
		}
	}
}
