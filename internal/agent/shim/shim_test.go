package shim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShim: the shim runs the program with its argv and environment, as a
// child subreaper (an orphaned grandchild is re-parented to it), and exits
// 127 when the program cannot be executed.
func TestShim(t *testing.T) {
	b := ELF(0)
	if b == nil {
		t.Skip("no shim for this architecture")
	}
	shim := filepath.Join(t.TempDir(), "shim")
	if err := os.WriteFile(shim, b, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `sh -c 'sleep 1 >/dev/null 2>&1 & echo $!' > "$D/orphan"; sleep 0.2; echo "$0 $1 $X"; echo "me $$"; echo "parent $(cut -d' ' -f4 /proc/$(cat "$D/orphan")/stat)"`
	cmd := exec.Command(shim, "/bin/sh", "sh", "-c", script, "zero", "one")
	cmd.Env = []string{"X=env-ok", "D=" + filepath.Dir(shim), "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[0] != "zero one env-ok" {
		t.Fatalf("output %q", out)
	}
	me, parent := strings.TrimPrefix(lines[1], "me "), strings.TrimPrefix(lines[2], "parent ")
	if me != parent {
		t.Fatalf("orphan re-parented to %s, want the shim's program %s", parent, me)
	}
	err = exec.Command(shim, "/nonexistent", "x").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 127 {
		t.Fatalf("exec failure: %v, want exit 127", err)
	}
}

// TestShimNproc: a shim made with a process limit gives it to the program
// (soft and hard), and the program still gets its argv.
func TestShimNproc(t *testing.T) {
	b := ELF(77)
	if b == nil {
		t.Skip("no shim for this architecture")
	}
	shim := filepath.Join(t.TempDir(), "shim")
	if err := os.WriteFile(shim, b, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(shim, "/bin/bash", "bash", "-c", `echo "$(ulimit -u) $(ulimit -Hu) $0"`, "arg0").CombinedOutput()
	if err != nil || string(out) != "77 77 arg0\n" {
		t.Fatalf("%v: %q, want 77 77 arg0", err, out)
	}
}

// TestLimitELF: the limiter shim gives the program its process limit
// (soft and hard) and its argv, but does not make it a child subreaper: an
// orphaned grandchild is re-parented elsewhere.
func TestLimitELF(t *testing.T) {
	b := LimitELF(77)
	if b == nil {
		t.Skip("no shim for this architecture")
	}
	shim := filepath.Join(t.TempDir(), "limit")
	if err := os.WriteFile(shim, b, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `sh -c 'sleep 1 >/dev/null 2>&1 & echo $!' > "$D/orphan"; sleep 0.2; echo "$(ulimit -u) $(ulimit -Hu) $0 $$ $(cut -d' ' -f4 /proc/$(cat "$D/orphan")/stat)"`
	cmd := exec.Command(shim, "/bin/bash", "bash", "-c", script, "arg0")
	cmd.Env = []string{"D=" + filepath.Dir(shim), "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	f := strings.Fields(string(out))
	if err != nil || len(f) != 5 || f[0] != "77" || f[1] != "77" || f[2] != "arg0" {
		t.Fatalf("%v: %q, want 77 77 arg0 <pid> <parent>", err, out)
	}
	if f[3] == f[4] {
		t.Fatalf("orphan re-parented to the limiter's program %s: it must not be a subreaper", f[3])
	}
}
