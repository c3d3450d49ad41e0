package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliRun runs bin/sbx with args against d (SBX_URL/SBX_API_KEY) and returns
// its exit code and output streams.
func (d *daemon) cliRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	sbxBin, _ := requirements(t)
	cmd := exec.Command(sbxBin, args...)
	cmd.Env = append(os.Environ(), "SBX_URL="+d.url, "SBX_API_KEY="+apiKey)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("sbx %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// cliWant runs sbx and fails unless it exits code.
func (d *daemon) cliWant(t *testing.T, code int, stdin string, args ...string) (string, string) {
	t.Helper()
	got, out, errOut := d.cliRun(t, stdin, args...)
	if got != code {
		t.Fatalf("sbx %q: exit %d, want %d\nstdout: %s\nstderr: %s", args, got, code, out, errOut)
	}
	return out, errOut
}

// TestCLI drives every client command of bin/sbx against a real daemon:
// exit codes, the two output streams, --json parsed back.
func TestCLI(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(nil)
	t.Run("exec", func(t *testing.T) { cliExec(t, d, sb.ID) })
	t.Run("ls", func(t *testing.T) { cliLs(t, d, sb.ID) })
	t.Run("inspect metrics version", func(t *testing.T) { cliInspect(t, d, sb.ID) })
	t.Run("cp", func(t *testing.T) { cliCp(t, d, sb.ID) })
	t.Run("logs", func(t *testing.T) { cliLogs(t, d) })
	t.Run("run kill", func(t *testing.T) { cliRunKill(t, d) })
	t.Run("help and completion", func(t *testing.T) { cliHelp(t, d) })
}

func cliExec(t *testing.T, d *daemon, id string) {
	out, errOut := d.cliWant(t, 7, "", "exec", id, "--", "sh", "-c", "echo out; echo err >&2; exit 7")
	if out != "out\n" || errOut != "err\n" {
		t.Errorf("streams: %q, %q", out, errOut)
	}
	if out, _ := d.cliWant(t, 0, "piped\n", "exec", "-i", id, "cat"); out != "piped\n" {
		t.Errorf("-i: %q", out)
	}
	if out, _ := d.cliWant(t, 0, "ignored", "exec", id, "cat"); out != "" {
		t.Errorf("stdin without -i reached the command: %q", out)
	}
	out, _ = d.cliWant(t, 0, "", "exec", "-u", "root", "-w", "/tmp", "-e", "A=b c", id, "--", "sh", "-c", `id -un; pwd; echo "$A"`)
	if out != "root\n/tmp\nb c\n" {
		t.Errorf("-u -w -e: %q", out)
	}
	if out, _ := d.cliWant(t, 0, "", "exec", id, "echo $((6*7))"); out != "42\n" {
		t.Errorf("shell command: %q", out)
	}
	d.cliWant(t, 137, "", "exec", id, "--", "sh", "-c", "kill -9 $$")
	if _, errOut := d.cliWant(t, 1, "", "exec", "nosuchsandbox0000000", "true"); !strings.Contains(errOut, "no such sandbox") {
		t.Errorf("missing sandbox: %q", errOut)
	}
	d.cliWant(t, 2, "", "exec", id)
}

func cliLs(t *testing.T, d *daemon, id string) {
	out, _ := d.cliWant(t, 0, "", "ls", "--json")
	var list []struct {
		SandboxID, State string
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) == 0 || list[0].SandboxID != id || list[0].State != "running" {
		t.Fatalf("ls --json: %v %q", err, out)
	}
	if out, _ := d.cliWant(t, 0, "", "ls", "-q"); out != id+"\n" {
		t.Errorf("ls -q: %q", out)
	}
	if out, _ := d.cliWant(t, 0, "", "ps"); !strings.Contains(out, id) || !strings.HasPrefix(out, "ID ") {
		t.Errorf("ps: %q", out)
	}
	if out, _ := d.cliWant(t, 0, "", "template", "ls", "--json"); !strings.Contains(out, `"base"`) {
		t.Errorf("template ls --json: %q", out)
	}
}

func cliInspect(t *testing.T, d *daemon, id string) {
	out, _ := d.cliWant(t, 0, "", "inspect", id)
	var got []struct {
		SandboxID, TemplateID string
		EnvdAccessToken       string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].SandboxID != id || got[0].TemplateID != "base" {
		t.Fatalf("inspect: %v %q", err, out)
	}
	if _, errOut := d.cliWant(t, 1, "", "inspect", "nosuchsandbox0000000"); !strings.Contains(errOut, "no such sandbox") {
		t.Errorf("inspect missing: %q", errOut)
	}
	var ms []struct{ MemTotal int64 }
	deadline := time.Now().Add(10 * time.Second)
	for len(ms) == 0 && time.Now().Before(deadline) { // the first sample may take a moment
		out, _ = d.cliWant(t, 0, "", "metrics", "--json", id)
		if err := json.Unmarshal([]byte(out), &ms); err != nil {
			t.Fatalf("metrics --json: %v %q", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(ms) == 0 || ms[0].MemTotal == 0 {
		t.Errorf("metrics: %q", out)
	}
	out, _ = d.cliWant(t, 0, "", "version", "--json")
	var v struct {
		Client, Server struct{ Version, GoVersion string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Client.Version == "" || v.Server.Version == "" || v.Server.GoVersion == "" {
		t.Errorf("version --json: %v %q", err, out)
	}
}

func cliCp(t *testing.T, d *daemon, id string) {
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o750))
	must(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("alpha\n"), 0o640))
	must(t, os.WriteFile(filepath.Join(src, "sub", "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755))
	must(t, os.Symlink("a.txt", filepath.Join(src, "link")))
	d.cliWant(t, 0, "", "cp", src, id+":/home/user/up")
	if out, _ := d.cliWant(t, 0, "", "exec", id, "cat up/link; up/sub/run.sh; stat -c %a up/sub up/a.txt"); out != "alpha\nran\n750\n640\n" {
		t.Errorf("uploaded tree: %q", out)
	}
	dst := filepath.Join(t.TempDir(), "down")
	d.cliWant(t, 0, "", "cp", id+":/home/user/up", dst)
	if b, err := os.ReadFile(filepath.Join(dst, "link")); err != nil || string(b) != "alpha\n" {
		t.Errorf("downloaded link: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "sub", "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("downloaded mode: %v %v", fi, err)
	}
	// Into an existing directory: under the source's name.
	d.cliWant(t, 0, "", "cp", filepath.Join(src, "a.txt"), id+":/tmp")
	d.cliWant(t, 0, "", "cp", id+":/tmp/a.txt", dst)
	if b, err := os.ReadFile(filepath.Join(dst, "a.txt")); err != nil || string(b) != "alpha\n" {
		t.Errorf("file round trip: %q %v", b, err)
	}
	if _, errOut := d.cliWant(t, 1, "", "cp", id+":/nonexistent", dst); !strings.Contains(errOut, "no such file") {
		t.Errorf("missing remote: %q", errOut)
	}
	d.cliWant(t, 2, "", "cp", src, dst)
}

func cliLogs(t *testing.T, d *daemon) {
	sb := d.create(nil)
	out, _ := d.cliWant(t, 0, "", "logs", sb.ID)
	if !strings.Contains(out, "Sandbox created") {
		t.Fatalf("logs: %q", out)
	}
	out, _ = d.cliWant(t, 0, "", "logs", "--json", sb.ID)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct{ Timestamp, Level, Message string }
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Level == "" || e.Message == "" {
			t.Fatalf("logs --json line %q: %v", line, err)
		}
	}
	// -f follows until the sandbox is gone, printing each entry once.
	sbxBin, _ := requirements(t)
	cmd := exec.Command(sbxBin, "logs", "-f", sb.ID)
	cmd.Env = append(os.Environ(), "SBX_URL="+d.url, "SBX_API_KEY="+apiKey)
	var fout bytes.Buffer
	cmd.Stdout = &fout
	must(t, cmd.Start())
	time.Sleep(1500 * time.Millisecond)
	d.cliWant(t, 0, "", "kill", sb.ID)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("logs -f: %v", err)
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("logs -f did not end after the sandbox was killed")
	}
	if n := strings.Count(fout.String(), "Sandbox created"); n != 1 {
		t.Errorf("logs -f printed the create %d times:\n%s", n, fout.String())
	}
	if !strings.Contains(fout.String(), "Sandbox killed: api") {
		t.Errorf("logs -f missed the kill:\n%s", fout.String())
	}
}

func cliRunKill(t *testing.T, d *daemon) {
	out, errOut := d.cliWant(t, 3, "", "run", "--", "echo hi; echo oops >&2; exit 3")
	if out != "hi\n" || errOut != "oops\n" {
		t.Errorf("run streams: %q %q", out, errOut)
	}
	_, errOut = d.cliWant(t, 0, "", "run", "--keep", "true")
	id := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(errOut), "sbx: kept sandbox"))
	// A flag after the id is a flag (it once became a second id).
	code, out, errOut := d.cliRun(t, "", "kill", id, "--url", d.url)
	if code != 0 || out != id+"\n" || errOut != "" {
		t.Fatalf("kill ID --url: %d %q %q", code, out, errOut)
	}
	d.cliWant(t, 1, "", "kill", id)
}

func cliHelp(t *testing.T, d *daemon) {
	for _, c := range []string{"run", "exec", "shell", "ls", "inspect", "logs", "metrics", "cp", "kill", "pause", "resume",
		"fork", "audit", "mcp", "version", "completion", "serve", "bench", "template"} {
		d.cliWant(t, 0, "", c, "--help")
	}
	for _, sh := range []string{"bash", "zsh"} {
		out, _ := d.cliWant(t, 0, "", "completion", sh)
		bin := sh
		if _, err := exec.LookPath(bin); err != nil {
			bin = "bash" // the zsh script is bash's after bashcompinit
			out = strings.Replace(out, "autoload -U +X bashcompinit && bashcompinit", "", 1)
		}
		check := exec.Command(bin, "-n")
		check.Stdin = strings.NewReader(out)
		if b, err := check.CombinedOutput(); err != nil {
			t.Errorf("%s completion does not parse: %v %s", sh, err, b)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
