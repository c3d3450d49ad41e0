// Package scripts tests the shell scripts' shared parts: the stage lines of
// scripts/install.sh and scripts/up.sh (scripts/lib/stage.sh).
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runStages runs body after sourcing stage.sh with a log in a temp dir; it
// returns stderr, the log and the exit code.
func runStages(t *testing.T, body string) (stderr, log string, code int) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "sub", "install.log")
	script := "set -euo pipefail\n. lib/stage.sh\nstage_log " + logPath + "\n" + body
	cmd := exec.Command("bash", "-c", script)
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(logPath)
	return errb.String(), string(b), code
}

func TestStageQuietProgress(t *testing.T) {
	stderr, log, code := runStages(t, `stage "bootstrap" sh -c 'echo raw tool output; echo "==> step one"; echo more'
stage_cached "runsc"
echo after`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Times are whole seconds: a stage may cross a second's boundary.
	for _, want := range []string{`log of this run: `, `bootstrap \.\.\.`, `step one  \(at \d+s\)`, `done in \d+s`, `runsc: already there`} {
		if !regexp.MustCompile(want).MatchString(stderr) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "raw tool output") {
		t.Errorf("raw output shown on the terminal:\n%s", stderr)
	}
	if !strings.Contains(log, "raw tool output") || !strings.Contains(log, "==> step one") {
		t.Errorf("log lacks the tool's output:\n%s", log)
	}
}

func TestStageFailureShowsLogTail(t *testing.T) {
	stderr, _, code := runStages(t, `stage "apt" sh -c 'for i in $(seq 1 50); do echo line $i; done; echo "E: broken" >&2; exit 7'
echo not reached >&2`)
	if code != 7 {
		t.Fatalf("exit %d, want the stage's 7", code)
	}
	if !regexp.MustCompile(`FAILED.* apt \(exit 7 after \d+s\); the end of .*install\.log`).MatchString(stderr) {
		t.Errorf("no failure line naming the log:\n%s", stderr)
	}
	if !strings.Contains(stderr, "E: broken") || !strings.Contains(stderr, "line 50") || strings.Contains(stderr, "line 1\n") {
		t.Errorf("want the log's tail (and only it):\n%s", stderr)
	}
	if strings.Contains(stderr, "not reached") {
		t.Error("the script went on after a failed stage")
	}
}

func TestStageTime(t *testing.T) {
	for in, want := range map[string]string{"0": "0s", "59": "59s", "60": "1m00s", "135": "2m15s"} {
		out, err := exec.Command("bash", "-c", ". lib/stage.sh; stage_time "+in).Output()
		if err != nil || string(out) != want {
			t.Errorf("stage_time %s = %q, %v; want %q", in, out, err, want)
		}
	}
}

func TestScriptsParse(t *testing.T) {
	for _, s := range []string{"up.sh", "install.sh", "build-runsc.sh", "test.sh", "deploy-validate.sh", "lib/stage.sh"} {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
}
