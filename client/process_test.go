package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/client/clienttest"
)

// newConn creates a sandbox on a fake server and connects to it.
func newConn(t *testing.T) (*clienttest.Server, *client.Client, *client.SandboxConn) {
	t.Helper()
	srv, c := newTest(t)
	sb, err := c.Create(context.Background(), client.CreateRequest{EnvVars: map[string]string{"FROM_SB": "sb"}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, c.Sandbox(sb)
}

func TestRun(t *testing.T) {
	tests := []struct {
		name           string
		req            client.RunRequest
		code           int
		stdout, stderr string
		wantArgv       []string // nil: not checked
		wantUser       string
	}{
		{"shell", client.RunRequest{Cmd: "echo hi; err oops; exit 3"}, 3, "hi\n", "oops\n", []string{"/bin/bash", "-l", "-c", "echo hi; err oops; exit 3"}, ""},
		{"argv", client.RunRequest{Argv: []string{"echo", "a  b", "c"}}, 0, "a  b c\n", "", []string{"echo", "a  b", "c"}, ""},
		{"not found", client.RunRequest{Cmd: "nosuch"}, 127, "", "nosuch: command not found\n", nil, ""},
		{"envs", client.RunRequest{Cmd: "env X; env FROM_SB", Envs: map[string]string{"X": "1"}}, 0, "1\nsb\n", "", nil, ""},
		{"cwd", client.RunRequest{Cmd: "pwd", Cwd: "/tmp"}, 0, "/tmp\n", "", nil, ""},
		{"user", client.RunRequest{Cmd: "whoami", User: "root"}, 0, "root\n", "", nil, "root"},
		{"default user", client.RunRequest{Cmd: "whoami"}, 0, "user\n", "", nil, ""},
		{"stdin", client.RunRequest{Argv: []string{"cat"}, Stdin: strings.NewReader("line1\nline2\n")}, 0, "line1\nline2\n", "", nil, ""},
		{"big stdin", client.RunRequest{Argv: []string{"cat"}, Stdin: strings.NewReader(strings.Repeat("x", 100<<10))}, 0, strings.Repeat("x", 100<<10), "", nil, ""},
		{"no stdin", client.RunRequest{Argv: []string{"cat"}}, 0, "", "", []string{"cat"}, ""},
		{"killed", client.RunRequest{Argv: []string{"selfkill"}}, -1, "", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _, conn := newConn(t)
			srv.Exec = withSelfKill(clienttest.Shell)
			var stdout, stderr bytes.Buffer
			code, err := conn.Run(context.Background(), tt.req, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("got (%d, %q, %q), want (%d, %q, %q)", code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
			checkStart(t, srv, conn, tt.wantArgv, tt.wantUser, tt.req.Stdin != nil)
		})
	}
}

// withSelfKill adds a "selfkill" command that ends as if SIGKILLed.
func withSelfKill(next clienttest.ExecFunc) clienttest.ExecFunc {
	return func(ctx context.Context, p *clienttest.Proc) int {
		if p.Argv[0] == "selfkill" {
			return -1
		}
		return next(ctx, p)
	}
}

// checkStart checks the wire form of the Start call: routing and auth
// headers, Connect JSON streaming, the SDK's stdin flag and Basic user.
func checkStart(t *testing.T, srv *clienttest.Server, conn *client.SandboxConn, argv []string, user string, stdin bool) {
	t.Helper()
	var start *clienttest.Request
	for _, r := range srv.Requests() {
		if r.Path == "/process.Process/Start" {
			start = &r
		}
	}
	if start == nil {
		t.Fatal("no Start request")
	}
	sb := srv.Sandboxes()[0]
	want := map[string]string{"E2b-Sandbox-Id": conn.ID(), "E2b-Sandbox-Port": "49983", "X-Access-Token": sb.Token,
		"Content-Type": "application/connect+json", "Keepalive-Ping-Interval": "50", "X-Api-Key": "", "Authorization": ""}
	if user != "" {
		want["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"))
	}
	for h, v := range want {
		if got := start.Header.Get(h); got != v {
			t.Errorf("header %s = %q, want %q", h, got, v)
		}
	}
	var body struct {
		Process struct {
			Cmd  string
			Args []string
		}
		Stdin *bool
	}
	if err := json.Unmarshal(start.Body[5:], &body); err != nil { // after the envelope prefix
		t.Fatalf("Start body %q: %v", start.Body, err)
	}
	if got := append([]string{body.Process.Cmd}, body.Process.Args...); argv != nil && !slices.Equal(got, argv) {
		t.Errorf("Start argv %q, want %q", got, argv)
	}
	if body.Stdin == nil || *body.Stdin != stdin {
		t.Errorf("Start stdin = %v, want explicit %v (as the SDK sends)", body.Stdin, stdin)
	}
}

// TestRunStreams proves output is delivered as it is produced: the command
// writes, then waits until the caller has seen that output.
func TestRunStreams(t *testing.T) {
	srv, _, conn := newConn(t)
	seen := make(chan struct{})
	srv.Exec = func(ctx context.Context, p *clienttest.Proc) int {
		io.WriteString(p.Stdout, "first\n")
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
			io.WriteString(p.Stderr, "output was not streamed\n")
			return 1
		}
		io.WriteString(p.Stdout, "second\n")
		return 0
	}
	out := writerFunc(func(b []byte) (int, error) {
		if string(b) == "first\n" {
			close(seen)
		}
		return len(b), nil
	})
	code, err := conn.Run(context.Background(), client.RunRequest{Cmd: "x"}, out, nil)
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func TestRunErrors(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		req  client.RunRequest
		ctx  context.Context
		conn func(*client.Client, *client.SandboxConn) *client.SandboxConn
		want error
	}{
		{"both cmd and argv", client.RunRequest{Cmd: "x", Argv: []string{"x"}}, nil, nil, client.ErrBadRequest},
		{"no command", client.RunRequest{}, nil, nil, client.ErrBadRequest},
		{"empty argv0", client.RunRequest{Argv: []string{""}}, nil, nil, client.ErrBadRequest},
		{"negative timeout", client.RunRequest{Cmd: "x", Timeout: -1}, nil, nil, client.ErrBadRequest},
		{"timeout", client.RunRequest{Cmd: "sleep", Timeout: 200 * time.Millisecond}, nil, nil, client.ErrTimeout},
		{"canceled", client.RunRequest{Cmd: "sleep"}, canceled, nil, context.Canceled},
		{"wrong token", client.RunRequest{Cmd: "echo"}, nil, func(c *client.Client, s *client.SandboxConn) *client.SandboxConn {
			return c.SandboxByID(s.ID(), "wrong")
		}, client.ErrUnauthorized},
		{"unknown sandbox", client.RunRequest{Cmd: "echo"}, nil, func(c *client.Client, _ *client.SandboxConn) *client.SandboxConn {
			return c.SandboxByID("nosuchsandbox", "t")
		}, client.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c, conn := newConn(t)
			if tt.conn != nil {
				conn = tt.conn(c, conn)
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			start := time.Now()
			code, err := conn.Run(ctx, tt.req, nil, nil)
			if !errors.Is(err, tt.want) || code != -1 {
				t.Fatalf("Run = %d, %v; want -1, %v", code, err, tt.want)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}
