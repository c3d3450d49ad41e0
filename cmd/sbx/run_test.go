package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/client/clienttest"
)

const testKey = "sbx_clikey"

// cli runs a client command against srv and returns its exit code and output.
func cli(t *testing.T, ctx context.Context, srv *clienttest.Server, cmd string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	t.Setenv("SBX_URL", srv.URL)
	t.Setenv("SBX_API_KEY", testKey)
	code := Main(ctx, append([]string{cmd}, args...), stdio{strings.NewReader(stdin), &out, &errOut})
	return code, out.String(), errOut.String()
}

func TestRunCommand(t *testing.T) {
	tests := []struct {
		name         string
		args         []string
		stdin        string
		code         int
		stdout       string
		stderrHas    string
		sandboxesAft int
	}{
		{"shell command", []string{"--", "echo hi; err oops; exit 3"}, "", 3, "hi\n", "oops", 0},
		{"argv", []string{"echo", "a b", "c"}, "", 0, "a b c\n", "", 0},
		{"flags", []string{"--env", "X=1", "--cwd", "/srv", "--user", "root", "--runtime", "crun", "--", "env X; pwd; whoami"}, "", 0, "1\n/srv\nroot\n", "", 0},
		{"stdin only with -i", []string{"cat"}, "data", 0, "", "", 0},
		{"stdin -i", []string{"-i", "cat"}, "data", 0, "data", "", 0},
		{"keep", []string{"--keep", "echo", "x"}, "", 0, "x\n", "sbx: kept sandbox ", 1},
		{"killed", []string{"selfkill", "now"}, "", exitKilled, "", "", 0},
		{"bad template", []string{"--template", "nope", "echo"}, "", exitInfra, "", `sbx: creating sandbox: 400 Bad Request: unknown template "nope"`, 0},
		{"no command", []string{"--keep"}, "", exitUsage, "", "no command given", 0},
		{"bad runtime", []string{"--runtime", "kata", "echo"}, "", exitUsage, "", `--runtime "kata"`, 0},
		{"bad env", []string{"--env", "NOEQUALS", "echo"}, "", exitUsage, "", "want KEY=VALUE", 0},
		{"bad timeout", []string{"--timeout", "0s", "echo"}, "", exitUsage, "", "--timeout must be positive", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, testKey)
			srv.Exec = func(ctx context.Context, p *clienttest.Proc) int {
				if p.Argv[0] == "selfkill" {
					return -1
				}
				return clienttest.Shell(ctx, p)
			}
			code, stdout, stderr := cli(t, context.Background(), srv, "run", tt.stdin, tt.args...)
			if code != tt.code || stdout != tt.stdout || !strings.Contains(stderr, tt.stderrHas) {
				t.Errorf("got %d, %q, %q; want %d, %q, stderr containing %q", code, stdout, stderr, tt.code, tt.stdout, tt.stderrHas)
			}
			if n := len(srv.Sandboxes()); n != tt.sandboxesAft {
				t.Errorf("%d sandboxes left, want %d", n, tt.sandboxesAft)
			}
		})
	}
}

// TestRunInterrupted checks that Ctrl-C during the command still removes
// the sandbox and exits 130.
func TestRunInterrupted(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	ctx, cancel := context.WithCancel(context.Background())
	srv.Exec = func(pctx context.Context, p *clienttest.Proc) int {
		cancel() // the user presses Ctrl-C once the command runs
		<-pctx.Done()
		return -1
	}
	code, _, stderr := cli(t, ctx, srv, "run", "", "sleep")
	if code != exitIntr || !strings.Contains(stderr, "interrupted") {
		t.Errorf("got %d, %q; want %d, interrupted", code, stderr, exitIntr)
	}
	if n := len(srv.Sandboxes()); n != 0 {
		t.Errorf("%d sandboxes left after interrupt", n)
	}
}

func TestClientFlags(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	tests := []struct {
		name      string
		args      []string
		code      int
		stderrHas string
	}{
		{"flag beats env", []string{"--api-key", "wrong"}, 1, "refused the API key"},
		{"bad url", []string{"--url", "localhost:3000"}, exitUsage, "want an origin"},
		{"url with path", []string{"--url", srv.URL + "/api"}, exitUsage, "want an origin"},
		{"no key", []string{"--api-key", ""}, exitUsage, "no API key"},
		{"unreachable", []string{"--url", "http://127.0.0.1:1"}, 1, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := cli(t, context.Background(), srv, "ls", "", tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderrHas) {
				t.Errorf("got %d, %q; want %d, %q", code, stderr, tt.code, tt.stderrHas)
			}
		})
	}
}

// TestRunFlagsAsExec: run takes exec's -e, -u and -w (--workdir; --cwd
// still works), so a command line moves from one to the other unchanged.
func TestRunFlagsAsExec(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	for _, args := range [][]string{{"-e", "X=1", "-w", "/srv", "-u", "root"}, {"--env", "X=1", "--workdir", "/srv", "--user", "root"}, {"--env", "X=1", "--cwd", "/srv", "--user", "root"}} {
		code, out, errOut := cli(t, context.Background(), srv, "run", "", append(args, "--", "env X; pwd; whoami")...)
		if code != 0 || out != "1\n/srv\nroot\n" {
			t.Errorf("%v: exit %d, %q, %q", args, code, out, errOut)
		}
	}
}

// TestLsStateChecked: a --state other than running/paused is bad usage,
// caught before any request.
func TestLsStateChecked(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	code, _, errOut := cli(t, context.Background(), srv, "ls", "", "--state", "running,bogus")
	if code != exitUsage || !strings.Contains(errOut, `"bogus"`) || len(srv.Requests()) != 0 {
		t.Errorf("exit %d, stderr %q, %d requests; want %d, naming the state, none", code, errOut, len(srv.Requests()), exitUsage)
	}
}
