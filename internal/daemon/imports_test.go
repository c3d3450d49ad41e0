package daemon

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyCmdImportsDaemon: the composition root sits on top; no other
// package of the module imports it (it would pull every piece in).
func TestOnlyCmdImportsDaemon(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	const mod = "github.com/sbx-dev/sbx/"
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], mod+"cmd/") || strings.HasPrefix(f[0], mod+"internal/daemon") {
			continue
		}
		for _, imp := range f[1:] {
			if imp == mod+"internal/daemon" {
				t.Errorf("%s imports internal/daemon", f[0])
			}
		}
	}
}
