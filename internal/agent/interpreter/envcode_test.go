package interpreter

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestValidateEnv(t *testing.T) {
	tests := []struct {
		lang string
		env  map[string]string
		ok   bool
	}{
		{Python, map[string]string{"A": "1", "dotted.name": "x"}, true},
		{Python, map[string]string{"": "1"}, false},
		{Python, map[string]string{"A=B": "1"}, false},
		{JavaScript, map[string]string{"A": "nul\x00"}, false},
		{Bash, map[string]string{"GOOD_1": "x"}, true},
		{Bash, map[string]string{"1BAD": "x"}, false},
		{Bash, map[string]string{"dotted.name": "x"}, false},
	}
	for _, tt := range tests {
		err := validateEnv(tt.lang, tt.env)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, errBadRequest)) {
			t.Errorf("validateEnv(%s, %q) = %v, want ok=%v", tt.lang, tt.env, err, tt.ok)
		}
	}
}

// TestBashEnvCode runs the generated code in a real bash: env_vars are set
// for the cell (quotes and all) and afterwards restored or unset.
func TestBashEnvCode(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	env := map[string]string{"KEPT": "new 'quoted' $value", "FRESH": "f"}
	script := "export KEPT=old\n" + applyEnvCode(Bash, env) +
		"echo \"in:$KEPT|$FRESH\"\n" + revertEnvCode(Bash, env) + "echo \"out:$KEPT|${FRESH-unset}\"\n" +
		setEnvCode(Bash, map[string]string{"G": "g"}, map[string]string{"KEPT": "x"}) + "echo \"set:$G|${KEPT-unset}\"\n"
	out, err := exec.Command("bash", "--norc", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "in:new 'quoted' $value|f\nout:old|unset\nset:g|unset\n"
	if string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestPythonEnvCode runs the generated code in python3 when there is one.
func TestPythonEnvCode(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	env := map[string]string{"KEPT": "n\"e<w>\u2028", "FRESH": "f"}
	script := strings.Join([]string{"import os", "os.environ['KEPT'] = 'old'", applyEnvCode(Python, env),
		"print(os.environ['KEPT'] == 'n\"e<w>\\u2028', os.environ['FRESH'])", revertEnvCode(Python, env),
		"print(os.environ['KEPT'], os.environ.get('FRESH'))",
		setEnvCode(Python, map[string]string{"G": "g"}, map[string]string{"KEPT": "x"}),
		setEnvCode(Python, map[string]string{"H": "h"}, nil), // nothing to unset
		"print(os.environ['G'], os.environ.get('KEPT'), os.environ['H'])"}, "\n")
	out, err := exec.Command("python3", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := "True f\nold None\ng None h\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestPythonEnvCodeKeepsTheCellsOwn: as on E2B, a key the cell sets or
// deletes itself keeps what the cell did; the others are restored, twice
// over (the tracking is installed once), a subprocess sees the env_vars, and
// no name is left in the user's namespace.
func TestPythonEnvCodeKeepsTheCellsOwn(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	env := map[string]string{"SET": "e", "DEL": "e", "NEW": "e", "BACK": "e"}
	cell := applyEnvCode(Python, env) + "\n" +
		"import subprocess; print(subprocess.run(['sh', '-c', 'echo $NEW'], capture_output=True, text=True).stdout, end='')\n" +
		"os.environ['SET'] = 'cell'; del os.environ['DEL']; os.environ['NEW'] = 'cell'\n" + revertEnvCode(Python, env)
	script := strings.Join([]string{"import os", "os.environ.update(SET='old', DEL='old', BACK='old')", "before = set(globals())",
		cell, cell, "print(os.environ.get('SET'), os.environ.get('DEL'), os.environ.get('NEW'), os.environ.get('BACK'))",
		"print(sorted(set(globals()) - before - {'before'}))"}, "\n")
	out, err := exec.Command("python3", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := "e\ne\ncell None cell old\n['subprocess']\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}
