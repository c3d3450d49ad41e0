package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

func TestStart(t *testing.T) {
	e := newEnv(t)
	e.state.Apply(identity.Init{EnvVars: map[string]string{"FROM_INIT": "init", "OVERRIDE": "init"}})
	must(t, os.WriteFile(filepath.Join(e.dir, "file"), nil, 0o644))
	tests := []struct {
		name    string
		req     *rpc.StartRequest
		user    string
		headers []string
		code    string // Connect code of the stream's error
		stdout  string
		stderr  string
		exit    int32
		exited  bool
		status  string
	}{
		{name: "stdout and stderr", req: sh("echo out; echo err >&2"), stdout: "out\n", stderr: "err\n", exited: true, status: "exit status 0"},
		{name: "exit code", req: sh("echo x; exit 3"), stdout: "x\n", exit: 3, exited: true, status: "exit status 3"},
		{name: "killed by a signal", req: sh("kill -9 $$"), exit: -1, status: "signal: killed"},
		{name: "default user and home", req: sh("id -u; pwd; echo $HOME $USER $LOGNAME $SHELL"),
			stdout: "1000\n" + "HOME\n" + "HOME user user /bin/bash\n", exited: true, status: "exit status 0"},
		{name: "supplementary groups", req: sh("id -G"), stdout: "1000 1234\n", exited: true, status: "exit status 0"},
		{name: "root", user: "root", req: sh("id -u; pwd"), stdout: "0\nDIR/root\n", exited: true, status: "exit status 0"},
		{name: "nobody without a home", user: "nobody", req: sh("id -un; pwd"), stdout: "nobody\n/\n", exited: true, status: "exit status 0"},
		{name: "unknown user", user: "mallory", req: sh("true"), code: "unauthenticated"}, // envd's, as E2B's runCmd.test.ts shows
		{name: "env: init defaults overlaid by the request", req: &rpc.StartRequest{Process: &rpc.ProcessConfig{
			Cmd: "/bin/sh", Args: []string{"-c", "echo $FROM_INIT $OVERRIDE $MINE"},
			Envs: map[string]string{"OVERRIDE": "req", "MINE": "mine"}}}, stdout: "init req mine\n", exited: true, status: "exit status 0"},
		{name: "invalid env name", req: &rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/true", Envs: map[string]string{"A=B": "x"}}}, code: "invalid_argument"},
		{name: "cwd absolute", req: withCwd(sh("pwd"), "/tmp"), stdout: "/tmp\n", exited: true, status: "exit status 0"},
		{name: "cwd tilde", req: withCwd(sh("pwd"), "~"), stdout: "HOME\n", exited: true, status: "exit status 0"},
		{name: "cwd relative to home", req: withCwd(sh("pwd"), "."), stdout: "HOME\n", exited: true, status: "exit status 0"},
		{name: "cwd missing", req: withCwd(sh("pwd"), "/does/not/exist"), code: "invalid_argument"},
		{name: "cwd is a file", req: withCwd(sh("pwd"), "DIR/file"), code: "invalid_argument"},
		{name: "cwd not accessible to the user", req: withCwd(sh("pwd"), "DIR/root"), code: "invalid_argument"},
		{name: "empty cmd", req: &rpc.StartRequest{Process: &rpc.ProcessConfig{}}, code: "invalid_argument"},
		{name: "no process config", req: &rpc.StartRequest{}, code: "invalid_argument"},
		{name: "cmd looked up in the process's PATH", req: &rpc.StartRequest{Process: &rpc.ProcessConfig{
			Cmd: "hello", Envs: map[string]string{"PATH": "DIR/bin:/usr/bin:/bin"}}}, stdout: "hello from PATH\n", exited: true, status: "exit status 0"},
		{name: "cmd not found", req: &rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "no-such-command-here"}}, code: "invalid_argument"},
		{name: "cmd not executable", req: &rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "DIR/file"}}, code: "invalid_argument"},
		{name: "stdin false is /dev/null", req: &rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/sh",
			Args: []string{"-c", "cat; readlink /proc/self/fd/0"}}, Stdin: ptr(false)}, stdout: "/dev/null\n", exited: true, status: "exit status 0"},
		{name: "pty", req: &rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", "stty size; echo $TERM; tty"}},
			Pty: &rpc.PTY{Size: &rpc.PTY_Size{Cols: 100, Rows: 30}}}, exited: true, status: "exit status 0"},
		{name: "pty size out of range", req: &rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/true"},
			Pty: &rpc.PTY{Size: &rpc.PTY_Size{Cols: 1 << 20, Rows: 30}}}, code: "invalid_argument"},
	}
	must(t, os.MkdirAll(filepath.Join(e.dir, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.dir, "bin", "hello"), []byte("#!/bin/sh\necho hello from PATH\n"), 0o755))
	fix := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "HOME", e.home), "DIR", e.dir)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.req.GetProcess()
			if cfg != nil {
				cfg.Cmd = fix(cfg.Cmd)
				if cfg.Cwd != nil {
					cfg.Cwd = ptr(fix(*cfg.Cwd))
				}
				for k, v := range cfg.Envs {
					cfg.Envs[k] = fix(v)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := e.start(t, ctx, call(tc.req, tc.user, tc.headers...))
			if got := codeOf(r.err); got != tc.code && !(tc.code == "" && got == "ok") {
				t.Fatalf("error %v, want code %q", r.err, tc.code)
			}
			if tc.code != "" {
				return
			}
			if r.order[0] != "start" || r.order[len(r.order)-1] != "end" || r.pid == 0 {
				t.Fatalf("events %v (pid %d)", r.order, r.pid)
			}
			if tc.req.Pty != nil {
				out := r.pty.String()
				if !strings.Contains(out, "30 100\r\n") || !strings.Contains(out, "xterm-256color\r\n") || !strings.Contains(out, "/dev/pts/") {
					t.Errorf("pty output %q", out)
				}
			} else if r.stdout.String() != fix(tc.stdout) || r.stderr.String() != fix(tc.stderr) {
				t.Errorf("stdout %q stderr %q, want %q %q", r.stdout.String(), r.stderr.String(), fix(tc.stdout), fix(tc.stderr))
			}
			end := r.end
			if end.GetExitCode() != tc.exit || end.GetExited() != tc.exited || end.GetStatus() != tc.status {
				t.Errorf("end %v, want exit %d exited %v status %q", end, tc.exit, tc.exited, tc.status)
			}
			if wantErr := tc.status != "exit status 0"; (end.Error != nil) != wantErr || (wantErr && end.GetError() != tc.status) {
				t.Errorf("end.error %v", end.Error)
			}
		})
	}
}

func withCwd(req *rpc.StartRequest, cwd string) *rpc.StartRequest {
	req.Process.Cwd = &cwd
	return req
}

func TestStartDefaultWorkdirFromInit(t *testing.T) {
	e := newEnv(t)
	e.state.Apply(identity.Init{DefaultWorkdir: "/tmp", DefaultUser: "root"})
	r := e.run(t, "pwd; id -un", "")
	if got := r.stdout.String(); got != "/tmp\nroot\n" {
		t.Fatalf("got %q", got)
	}
}

func TestStartBinaryCodec(t *testing.T) {
	e := newEnv(t)
	stream, err := e.binary.Start(context.Background(), call(sh("printf abc"), "root"))
	must(t, err)
	r := collect(t, func() (*rpc.ProcessEvent, bool) {
		if !stream.Receive() {
			return nil, false
		}
		return stream.Msg().GetEvent(), true
	}, stream.Err)
	if r.err != nil || r.stdout.String() != "abc" || r.end.GetStatus() != "exit status 0" {
		t.Fatalf("%+v %v", r.order, r.err)
	}
}

// Connect-Timeout-Ms is the process's lifetime: the whole group is killed
// and the stream ends with deadline_exceeded after the output so far.
func TestStartTimeoutKillsProcessGroup(t *testing.T) {
	e := newEnv(t)
	pidfile := filepath.Join(e.dir, "child.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	begin := time.Now()
	r := e.start(t, ctx, call(sh(fmt.Sprintf("echo before; sleep 30 & echo $! > %s; wait", pidfile)), "root"))
	if codeOf(r.err) != "deadline_exceeded" {
		t.Fatalf("error %v", r.err)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("took %v", took)
	}
	if r.stdout.String() != "before\n" || r.end != nil {
		t.Fatalf("stdout %q end %v", r.stdout.String(), r.end)
	}
	b, err := os.ReadFile(pidfile)
	must(t, err)
	child := strings.TrimSpace(string(b))
	eventually(t, "the background child to die", func() bool {
		_, err := os.Stat("/proc/" + child)
		return err != nil
	})
	eventually(t, "the process to leave the table", func() bool { return len(e.listed(t)) == 0 })
}

// Keepalive-Ping-Interval (seconds) makes keepalive events while idle.
func TestStartKeepalive(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := e.start(t, ctx, call(sh("echo a; sleep 2.5; echo b"), "root", "Keepalive-Ping-Interval", "1"))
	if r.err != nil || r.keepalives < 1 || r.stdout.String() != "a\nb\n" {
		t.Fatalf("keepalives %d, stdout %q, err %v, order %v", r.keepalives, r.stdout.String(), r.err, r.order)
	}
	if keepaliveInterval(map[string][]string{"Keepalive-Ping-Interval": {"junk"}}) != defaultKeepalive ||
		keepaliveInterval(map[string][]string{"Keepalive-Ping-Interval": {"-4"}}) != defaultKeepalive ||
		keepaliveInterval(nil) != defaultKeepalive {
		t.Fatal("invalid intervals must fall back to the default")
	}
}

// A client that goes away leaves its process running (background commands).
func TestStartSurvivesClientDisconnect(t *testing.T) {
	e := newEnv(t)
	pid, res, stop := e.started(t, call(sh("sleep 30"), "root"))
	stop()
	if r := wait(t, res); codeOf(r.err) != "canceled" {
		t.Fatalf("stream error %v", r.err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, ok := e.listed(t)[pid]; !ok {
		t.Fatal("process gone after its client left")
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		t.Fatal("process killed after its client left")
	}
}

func TestStartTags(t *testing.T) {
	e := newEnv(t)
	req := sh("sleep 30")
	req.Tag = ptr("svc")
	pid, _, _ := e.started(t, call(req, "root"))
	if info := e.listed(t)[pid]; info.GetTag() != "svc" {
		t.Fatalf("list: %v", info)
	}
	dup := sh("true")
	dup.Tag = ptr("svc")
	if r := e.start(t, context.Background(), call(dup, "root")); codeOf(r.err) != "already_exists" {
		t.Fatalf("duplicate tag: %v", r.err)
	}
	p, err := e.svc.find(byTag("svc"))
	if err != nil || p.pid != pid {
		t.Fatalf("find by tag: %v %v", p, err)
	}
}

// Processes are the OOM killer's first choice, not the agent; a PTY belongs
// to the user it runs as.
func TestStartOOMScoreAndPTYOwner(t *testing.T) {
	e := newEnv(t)
	own, err := os.ReadFile("/proc/self/oom_score_adj")
	must(t, err)
	n, _ := strconv.Atoi(strings.TrimSpace(string(own)))
	want := strconv.Itoa(min(1000, max(n, 0)+100))
	if got := e.run(t, "sleep 0.05; cat /proc/self/oom_score_adj", "").stdout.String(); got != want+"\n" {
		t.Fatalf("oom_score_adj %q, want %s", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := e.start(t, ctx, call(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", "stat -c %u $(tty)"}},
		Pty: &rpc.PTY{Size: &rpc.PTY_Size{Cols: 80, Rows: 24}}}, ""))
	if r.err != nil || strings.TrimSpace(r.pty.String()) != "1000" {
		t.Fatalf("tty owner %q, err %v", r.pty.String(), r.err)
	}
}

// A missing cwd is envd's invalid_argument "cwd '<dir>' does not exist";
// callers match its words.
func TestStartMissingCwdMessage(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := e.start(t, ctx, call(withCwd(sh("pwd"), "/does/not/exist"), ""))
	if want := "invalid_argument: cwd '/does/not/exist' does not exist"; r.err == nil || r.err.Error() != want {
		t.Fatalf("error %v, want %q", r.err, want)
	}
}
