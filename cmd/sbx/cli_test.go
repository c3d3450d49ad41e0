package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/client/clienttest"
)

// TestHelpExitsZero: --help and -h print usage on stdout and exit 0 on
// every command, including those that parse their own flags.
func TestHelpExitsZero(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	cmds := [][]string{{}, {"run"}, {"exec"}, {"shell"}, {"ls"}, {"ps"}, {"inspect"}, {"logs"}, {"metrics"}, {"cp"},
		{"kill"}, {"rm"}, {"pause"}, {"resume"}, {"fork"}, {"audit"}, {"mcp"}, {"version"}, {"completion"},
		{"serve"}, {"bench"}, {"template"}, {"template", "ls"}, {"template", "inspect"}, {"template", "rm"},
		{"template", "build"}, {"template", "build", "-n", "x"}}
	for _, c := range cmds {
		for _, h := range []string{"--help", "-h"} {
			name := strings.Join(append(c, h), " ")
			t.Run(name, func(t *testing.T) {
				args := append(append([]string{}, c...), h)
				code, out, errOut := cli(t, context.Background(), srv, args[0], "", args[1:]...)
				ownStderr := len(c) > 0 && (c[0] == "serve" || c[0] == "bench" || (len(c) == 2 && c[1] == "build")) // print to os.Stderr
				if code != 0 || (!ownStderr && !strings.Contains(strings.ToLower(out+errOut), "usage")) {
					t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
				}
			})
		}
	}
}

// TestFlagsAnyPosition: a flag after the arguments is a flag, not an
// argument (`sbx kill ID --url U` once sent DELETE /sandboxes/--url).
func TestFlagsAnyPosition(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	srv.Add(&clienttest.Sandbox{ID: "aaaaaaaaaaaaaaaaaaaa", TemplateID: "base"})
	t.Setenv("SBX_URL", "http://127.0.0.1:1") // wrong: only the flag reaches srv
	code := Main(context.Background(), []string{"kill", "aaaaaaaaaaaaaaaaaaaa", "--url", srv.URL, "--api-key", testKey},
		stdio{strings.NewReader(""), &strings.Builder{}, &strings.Builder{}})
	if code != 0 || len(srv.Sandboxes()) != 0 {
		t.Fatalf("exit %d, %d sandboxes left", code, len(srv.Sandboxes()))
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "--") {
			t.Errorf("flag sent as an id: %s %s", r.Method, r.Path)
		}
	}
}

// TestUsageErrors: unknown commands and flags, and missing arguments, exit 2
// with a hint.
func TestUsageErrors(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	tests := [][]string{{"nosuch"}, {"ls", "--nosuch"}, {"exec"}, {"exec", "abc"}, {"cp", "a"}, {"cp", "a", "b"},
		{"logs"}, {"completion", "fish"}, {"run", "--bogus", "echo"}}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, errOut := cli(t, context.Background(), srv, args[0], "", args[1:]...)
			if code != exitUsage || errOut == "" {
				t.Fatalf("exit %d, stderr %q; want %d and a message", code, errOut, exitUsage)
			}
		})
	}
}

// TestRunArgvPassthrough: after the command's first word everything is the
// command's, flags included; a leading "--" is dropped.
func TestRunArgvPassthrough(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	code, out, errOut := cli(t, context.Background(), srv, "run", "", "--env", "X=1", "echo", "--url", "-e")
	if code != 0 || out != "--url -e\n" {
		t.Fatalf("exit %d, %q, %q", code, out, errOut)
	}
	code, out, _ = cli(t, context.Background(), srv, "run", "", "--", "echo", "a")
	if code != 0 || out != "a\n" {
		t.Fatalf("with --: exit %d, %q", code, out)
	}
}

func TestCompletionScript(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	for _, sh := range []string{"bash", "zsh"} {
		code, out, _ := cli(t, context.Background(), srv, "completion", "", sh)
		for _, want := range []string{"complete -o default -F _sbx sbx", "exec) words=", "--interactive", "sbx ls -q", "template) words="} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("%s: exit %d, missing %q in:\n%s", sh, code, want, out)
			}
		}
	}
}

func TestVersionJSON(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	code, out, _ := cli(t, context.Background(), srv, "version", "", "--json")
	var v struct {
		Client struct{ Version, GoVersion string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Client.Version == "" || v.Client.GoVersion == "" {
		t.Fatalf("bad JSON %q: %v", out, err)
	}
	if code != 1 { // the fake daemon has no /sbx/version
		t.Fatalf("exit %d, want 1 when the server cannot be asked", code)
	}
}

// TestHelpHidesKey: no help text prints the API key of SBX_API_KEY (the
// flag sets of template build and bench once showed it as the default), and
// each flag line is its name and type ("-floor <runtime> run" was not).
func TestHelpHidesKey(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	for _, args := range [][]string{{"template", "build", "-n", "x", "--help"}, {"bench", "--help"}, {"ls", "--help"}} {
		r, w, err := os.Pipe() // these flag sets print to os.Stderr
		if err != nil {
			t.Fatal(err)
		}
		stderr := os.Stderr
		os.Stderr = w
		_, out, errOut := cli(t, context.Background(), srv, args[0], "", args[1:]...)
		os.Stderr = stderr
		w.Close()
		own, _ := io.ReadAll(r)
		if all := out + errOut + string(own); strings.Contains(all, testKey) || !strings.Contains(all, "api-key") {
			t.Errorf("%v: the key is shown, or no --api-key:\n%s", args, all)
		}
		for _, line := range strings.Split(string(own), "\n") { // a `word` in a usage names the argument
			if strings.HasPrefix(line, "  -") && len(strings.Fields(line)) > 2 {
				t.Errorf("%v: flag line with more than a name and a type: %q", args, line)
			}
		}
	}
}

// TestUsageHintNamesCommand: a bad flag of a command points at that
// command's help, not at the root's.
func TestUsageHintNamesCommand(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	for args, want := range map[string]string{"ls --bogus": "sbx ls --help", "exec -e BAD x -- true": "sbx exec --help",
		"teams rm --x": "sbx teams rm --help", "logs --level bogus x": "sbx logs --help", "nosuch": "'sbx --help'"} {
		a := strings.Fields(args)
		code, _, errOut := cli(t, context.Background(), srv, a[0], "", a[1:]...)
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", args, code, errOut, exitUsage, want)
		}
	}
}

// TestLogsLevelHelp: --level's help and its error name the four levels, not
// an empty one (`--level=""`, `must be one of "","debug",...`).
func TestLogsLevelHelp(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	_, out, _ := cli(t, context.Background(), srv, "logs", "", "--help")
	if !strings.Contains(out, "--level=LEVEL") || strings.Contains(out, `""`) {
		t.Errorf("help: %s", out)
	}
	code, _, errOut := cli(t, context.Background(), srv, "logs", "", "--level", "bogus", "x")
	if code != exitUsage || strings.Contains(errOut, `""`) || !strings.Contains(errOut, "debug, info, warn or error") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestAuditActionChecked: audit's one action is named in the error of a
// wrong one (kong's enum listed an empty value: must be one of "verify","").
func TestAuditActionChecked(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	code, _, errOut := cli(t, context.Background(), srv, "audit", "", "bogus")
	if code != exitUsage || strings.Contains(errOut, `""`) || !strings.Contains(errOut, "the only action is verify") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
