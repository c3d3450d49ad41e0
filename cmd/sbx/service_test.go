package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// installService runs `sbx service install --no-start` into dir.
func installService(t *testing.T, dir string, serve ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"service", "install", "--no-start", "--unit-dir", dir, "--env-file", filepath.Join(dir, "etc", "sbx.env"), "--"}, serve...)
	code = Main(context.Background(), args, stdio{strings.NewReader(""), &out, &errb})
	return code, out.String(), errb.String()
}

// parseUnit reads a unit file into section.key → values (a key may repeat).
func parseUnit(t *testing.T, b []byte) map[string][]string {
	t.Helper()
	m, section := map[string][]string{}, ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("unit line without '=': %q", line)
			}
			m[section+"."+k] = append(m[section+"."+k], v)
		}
	}
	return m
}

// unquoteExec splits a command line as systemd does for the quoting
// systemdQuote produces (double quotes, \\ \" \n escapes, %% and $$).
func unquoteExec(t *testing.T, s string) []string {
	t.Helper()
	var args []string
	for _, m := range regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(s, -1) {
		a := strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n", "%%", "%", "$$", "$").Replace(m[1])
		args = append(args, a)
	}
	return args
}

func TestServiceInstall(t *testing.T) {
	t.Setenv("SBX_API_KEY", "")
	dir := t.TempDir()
	serve := []string{"--data-dir", "/var/lib/s b%x$y", "--listen", "0.0.0.0:3000", "--pool", `base=1`}
	code, out, errOut := installService(t, dir, serve...)
	if code != 0 {
		t.Fatalf("install exited %d: %s", code, errOut)
	}
	env := filepath.Join(dir, "etc", "sbx.env")
	key := regexp.MustCompile(`SBX_API_KEY=(e2b_[0-9a-f]{40})`).FindStringSubmatch(out)
	if key == nil {
		t.Fatalf("no generated key shown: %q", out)
	}
	checkMode(t, env, 0o600)
	checkMode(t, filepath.Dir(env), 0o700|os.ModeDir)
	if b, _ := os.ReadFile(env); envKeyOf(b) != key[1] {
		t.Fatalf("env file %q does not hold the shown key %s", b, key[1])
	}

	unit, err := os.ReadFile(filepath.Join(dir, "sbx.service"))
	if err != nil {
		t.Fatal(err)
	}
	u := parseUnit(t, unit)
	for k, want := range map[string]string{
		"Service.Type": "notify", "Service.NotifyAccess": "main", "Service.KillMode": "process",
		"Service.Restart": "on-failure", "Service.EnvironmentFile": env, "Install.WantedBy": "multi-user.target",
	} {
		if got := u[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if got, want := unquoteExec(t, u["Service.ExecStart"][0]), append([]string{exe, "serve"}, serve...); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("ExecStart runs %q, want %q", got, want)
	}
	verifyUnit(t, filepath.Join(dir, "sbx.service"))

	// an upgrade rewrites the unit and keeps the key
	if code, out, errOut := installService(t, dir, "--listen", "127.0.0.1:3001"); code != 0 || strings.Contains(out, "SBX_API_KEY") {
		t.Fatalf("second install: exit %d, stdout %q, stderr %q; want 0 and no new key", code, out, errOut)
	}
	if b, _ := os.ReadFile(env); envKeyOf(b) != key[1] {
		t.Fatalf("second install changed the key: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sbx.service")); !strings.Contains(string(b), `"127.0.0.1:3001"`) {
		t.Fatalf("second install did not rewrite the unit:\n%s", b)
	}
}

func TestServiceInstallKeyFromEnvironment(t *testing.T) {
	t.Setenv("SBX_API_KEY", "e2b_given")
	dir := t.TempDir()
	if code, out, errOut := installService(t, dir); code != 0 || strings.Contains(out, "e2b_given") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want 0, the given key not echoed", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "etc", "sbx.env")); envKeyOf(b) != "e2b_given" {
		t.Fatalf("env file %q, want the given key", b)
	}
}

func TestServiceInstallBadServeFlags(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := installService(t, dir, "--no-such-flag")
	if code != exitUsage || !strings.Contains(errOut, "no-such-flag") {
		t.Fatalf("exit %d, stderr %q; want %d naming the flag", code, errOut, exitUsage)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a refused install wrote %v", ents)
	}
}

func TestSystemdQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":      `"plain"`,
		"a b":        `"a b"`,
		`q"b\s`:      `"q\"b\\s"`,
		"100%":       `"100%%"`,
		"$HOME":      `"$$HOME"`,
		"line\nnext": `"line\nnext"`,
	} {
		if got := systemdQuote(in); got != want {
			t.Errorf("systemdQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Fatalf("%s mode %v, want %v", path, fi.Mode(), want)
	}
}

// verifyUnit runs systemd's own checker on the unit when it is installed
// (apt: systemd); it needs no running systemd.
func verifyUnit(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze not installed: unit checked by parsing only")
		return
	}
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
