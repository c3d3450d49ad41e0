package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
)

func TestConnect(t *testing.T) {
	e := newEnv(t)
	fifo := filepath.Join(e.dir, "go")
	req := sh(fmt.Sprintf("echo early; read x < %s; echo late; exit 4", fifo))
	req.Tag = ptr("worker")
	must(t, mkfifo(fifo))
	pid, startRes, _ := e.started(t, call(req, "root"))
	tests := []struct {
		name string
		sel  *rpc.ProcessSelector
		code string
	}{
		{"by pid", byPid(pid), "ok"},
		{"by tag", byTag("worker"), "ok"},
		{"unknown pid", byPid(1 << 30), "not_found"},
		{"unknown tag", byTag("nope"), "not_found"},
		{"no selector", &rpc.ProcessSelector{}, "invalid_argument"},
		{"no process", nil, "invalid_argument"},
	}
	var attached []<-chan *result
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := e.client.Connect(context.Background(), connect.NewRequest(&rpc.ConnectRequest{Process: tc.sel}))
			must(t, err)
			if tc.code != "ok" {
				r := collect(t, func() (*rpc.ProcessEvent, bool) {
					if !stream.Receive() {
						return nil, false
					}
					return stream.Msg().GetEvent(), true
				}, stream.Err)
				if codeOf(r.err) != tc.code {
					t.Fatalf("error %v, want %s", r.err, tc.code)
				}
				return
			}
			if !stream.Receive() || stream.Msg().GetEvent().GetStart().GetPid() != pid {
				t.Fatalf("first event %v, err %v", stream.Msg(), stream.Err())
			}
			ch := make(chan *result, 1)
			go func() {
				ch <- collect(t, func() (*rpc.ProcessEvent, bool) {
					if !stream.Receive() {
						return nil, false
					}
					return stream.Msg().GetEvent(), true
				}, stream.Err)
			}()
			attached = append(attached, ch)
		})
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	must(t, err)
	f.WriteString("x\n")
	f.Close()
	for _, ch := range append(attached, startRes) {
		r := wait(t, ch)
		if r.err != nil || r.end.GetExitCode() != 4 || !strings.HasSuffix(r.stdout.String(), "late\n") {
			t.Errorf("stream: err %v end %v stdout %q", r.err, r.end, r.stdout.String())
		}
	}
	// A finished process is gone.
	stream, err := e.client.Connect(context.Background(), connect.NewRequest(&rpc.ConnectRequest{Process: byPid(pid)}))
	must(t, err)
	for stream.Receive() {
	}
	if codeOf(stream.Err()) != "not_found" {
		t.Fatalf("connect to an ended process: %v", stream.Err())
	}
}

func TestList(t *testing.T) {
	e := newEnv(t)
	if n := len(e.listed(t)); n != 0 {
		t.Fatalf("%d processes before any start", n)
	}
	req := &rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/sleep", Args: []string{"30"},
		Envs: map[string]string{"A": "b"}, Cwd: ptr("/tmp")}, Tag: ptr("t1")}
	p1, _, _ := e.started(t, call(req, "root"))
	p2, _, _ := e.started(t, call(sh("sleep 30"), "root"))
	got := e.listed(t)
	if len(got) != 2 {
		t.Fatalf("list: %v", got)
	}
	if c := got[p1].GetConfig(); c.GetCmd() != "/bin/sleep" || c.GetArgs()[0] != "30" || c.GetEnvs()["A"] != "b" || c.GetCwd() != "/tmp" || got[p1].GetTag() != "t1" {
		t.Fatalf("p1: %v", got[p1])
	}
	if got[p2].Tag != nil {
		t.Fatalf("p2 has a tag: %v", got[p2])
	}
	_, err := e.client.SendSignal(context.Background(), connect.NewRequest(&rpc.SendSignalRequest{Process: byPid(p1), Signal: rpc.Signal_SIGNAL_SIGKILL}))
	must(t, err)
	eventually(t, "the killed process to leave the list", func() bool {
		_, ok := e.listed(t)[p1]
		return !ok
	})
}

func TestSendInput(t *testing.T) {
	e := newEnv(t)
	catPid, catRes, _ := e.started(t, call(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/cat"}}, "root"))
	noStdin, _, _ := e.started(t, call(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/sleep", Args: []string{"30"}}, Stdin: ptr(false)}, "root"))
	ptyPid, ptyRes, _ := e.started(t, call(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/sh"},
		Pty: &rpc.PTY{Size: &rpc.PTY_Size{Cols: 80, Rows: 24}}}, "root"))
	stdin := func(b string) *rpc.ProcessInput {
		return &rpc.ProcessInput{Input: &rpc.ProcessInput_Stdin{Stdin: []byte(b)}}
	}
	ptyIn := func(b string) *rpc.ProcessInput {
		return &rpc.ProcessInput{Input: &rpc.ProcessInput_Pty{Pty: []byte(b)}}
	}
	tests := []struct {
		name string
		sel  *rpc.ProcessSelector
		in   *rpc.ProcessInput
		code string
	}{
		{"stdin", byPid(catPid), stdin("hello\n"), "ok"},
		{"more stdin", byPid(catPid), stdin("world\n"), "ok"},
		{"pty bytes to a piped process", byPid(catPid), ptyIn("x"), "failed_precondition"},
		{"stdin bytes to a PTY", byPid(ptyPid), stdin("x"), "failed_precondition"},
		{"stdin disabled", byPid(noStdin), stdin("x"), "failed_precondition"},
		{"no input", byPid(catPid), &rpc.ProcessInput{}, "invalid_argument"},
		{"unknown pid", byPid(1 << 30), stdin("x"), "not_found"},
		{"pty input", byPid(ptyPid), ptyIn("echo via-pty; exit 7\n"), "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.SendInput(context.Background(), connect.NewRequest(&rpc.SendInputRequest{Process: tc.sel, Input: tc.in}))
			if codeOf(err) != tc.code {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
		})
	}
	_, err := e.client.CloseStdin(context.Background(), connect.NewRequest(&rpc.CloseStdinRequest{Process: byPid(catPid)}))
	must(t, err)
	if r := wait(t, catRes); r.stdout.String() != "hello\nworld\n" || r.end.GetExitCode() != 0 {
		t.Fatalf("cat: %q %v", r.stdout.String(), r.end)
	}
	if r := wait(t, ptyRes); !strings.Contains(r.pty.String(), "via-pty") || r.end.GetExitCode() != 7 {
		t.Fatalf("pty: %q %v", r.pty.String(), r.end)
	}
}

// A process that never reads its stdin: SendInput gives up with the request.
func TestSendInputBlockedHonoursDeadline(t *testing.T) {
	e := newEnv(t)
	pid, _, _ := e.started(t, call(sh("sleep 30"), "root"))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	big := make([]byte, 4<<20) // far more than a pipe holds
	_, err := e.binary.SendInput(ctx, connect.NewRequest(&rpc.SendInputRequest{Process: byPid(pid),
		Input: &rpc.ProcessInput{Input: &rpc.ProcessInput_Stdin{Stdin: big}}}))
	if c := codeOf(err); c != "deadline_exceeded" && c != "canceled" {
		t.Fatalf("error %v", err)
	}
	// The process is still there and stdin still usable by a later writer.
	if _, ok := e.listed(t)[pid]; !ok {
		t.Fatal("process gone")
	}
}

func TestStreamInput(t *testing.T) {
	e := newEnv(t)
	pid, res, _ := e.started(t, call(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/cat"}}, "root"))
	tests := []struct {
		name   string
		events []*rpc.StreamInputRequest
		code   string
	}{
		{"data before start", []*rpc.StreamInputRequest{data("x")}, "invalid_argument"},
		{"unknown process", []*rpc.StreamInputRequest{startIn(byPid(1 << 30))}, "not_found"},
		{"two starts", []*rpc.StreamInputRequest{startIn(byPid(pid)), startIn(byPid(pid))}, "invalid_argument"},
		{"in order", []*rpc.StreamInputRequest{startIn(byPid(pid)), data("a"), keepaliveIn(), data("b"), data("c\n")}, "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stream := e.client.StreamInput(context.Background())
			for _, ev := range tc.events {
				if err := stream.Send(ev); err != nil {
					break
				}
			}
			_, err := stream.CloseAndReceive()
			if codeOf(err) != tc.code {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
		})
	}
	_, err := e.client.CloseStdin(context.Background(), connect.NewRequest(&rpc.CloseStdinRequest{Process: byPid(pid)}))
	must(t, err)
	if r := wait(t, res); r.stdout.String() != "abc\n" {
		t.Fatalf("stdout %q", r.stdout.String())
	}
}

func startIn(sel *rpc.ProcessSelector) *rpc.StreamInputRequest {
	return &rpc.StreamInputRequest{Event: &rpc.StreamInputRequest_Start{Start: &rpc.StreamInputRequest_StartEvent{Process: sel}}}
}

func data(s string) *rpc.StreamInputRequest {
	return &rpc.StreamInputRequest{Event: &rpc.StreamInputRequest_Data{Data: &rpc.StreamInputRequest_DataEvent{
		Input: &rpc.ProcessInput{Input: &rpc.ProcessInput_Stdin{Stdin: []byte(s)}}}}}
}

func keepaliveIn() *rpc.StreamInputRequest {
	return &rpc.StreamInputRequest{Event: &rpc.StreamInputRequest_Keepalive{Keepalive: &rpc.StreamInputRequest_KeepAlive{}}}
}

func TestCloseStdin(t *testing.T) {
	e := newEnv(t)
	catPid, catRes, _ := e.started(t, call(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/cat"}}, "root"))
	ptyPid, _, _ := e.started(t, call(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/cat"}, Pty: &rpc.PTY{}}, "root"))
	tests := []struct {
		name string
		sel  *rpc.ProcessSelector
		code string
	}{
		{"piped", byPid(catPid), "ok"},
		{"twice is fine", byPid(catPid), "ok"},
		{"pty", byPid(ptyPid), "failed_precondition"},
		{"unknown", byTag("nope"), "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.CloseStdin(context.Background(), connect.NewRequest(&rpc.CloseStdinRequest{Process: tc.sel}))
			if codeOf(err) != tc.code && !(tc.name == "twice is fine" && codeOf(err) == "not_found") {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
		})
	}
	if r := wait(t, catRes); r.end.GetExitCode() != 0 {
		t.Fatalf("cat after EOF: %v", r.end)
	}
}

func TestSendSignal(t *testing.T) {
	e := newEnv(t)
	pidfile := filepath.Join(e.dir, "grandchild")
	termPid, termRes, _ := e.started(t, call(sh("sleep 30"), "root"))
	killPid, killRes, _ := e.started(t, call(sh(fmt.Sprintf("sleep 30 & echo $! > %s; wait", pidfile)), "root"))
	eventually(t, "the pid file", func() bool { b, _ := os.ReadFile(pidfile); return len(b) > 0 })
	tests := []struct {
		name   string
		sel    *rpc.ProcessSelector
		sig    rpc.Signal
		code   string
		status string
		res    <-chan *result
	}{
		{"unspecified", byPid(termPid), rpc.Signal_SIGNAL_UNSPECIFIED, "invalid_argument", "", nil},
		{"unknown", byPid(1 << 30), rpc.Signal_SIGNAL_SIGTERM, "not_found", "", nil},
		{"sigterm", byPid(termPid), rpc.Signal_SIGNAL_SIGTERM, "ok", "signal: terminated", termRes},
		{"sigkill reaches the whole group", byPid(killPid), rpc.Signal_SIGNAL_SIGKILL, "ok", "signal: killed", killRes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.SendSignal(context.Background(), connect.NewRequest(&rpc.SendSignalRequest{Process: tc.sel, Signal: tc.sig}))
			if codeOf(err) != tc.code {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
			if tc.res == nil {
				return
			}
			r := wait(t, tc.res)
			if r.end.GetStatus() != tc.status || r.end.GetExitCode() != -1 || r.end.GetExited() {
				t.Fatalf("end %v", r.end)
			}
		})
	}
	b, _ := os.ReadFile(pidfile)
	eventually(t, "the grandchild to die", func() bool {
		_, err := os.Stat("/proc/" + strings.TrimSpace(string(b)))
		return err != nil
	})
}

func TestUpdate(t *testing.T) {
	e := newEnv(t)
	fifo := filepath.Join(e.dir, "go")
	must(t, mkfifo(fifo))
	ptyPid, ptyRes, _ := e.started(t, call(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/sh",
		Args: []string{"-c", "read x < " + fifo + "; stty size"}}, Pty: &rpc.PTY{Size: &rpc.PTY_Size{Cols: 80, Rows: 24}}}, "root"))
	pipePid, _, _ := e.started(t, call(sh("sleep 30"), "root"))
	size := func(c, r uint32) *rpc.PTY { return &rpc.PTY{Size: &rpc.PTY_Size{Cols: c, Rows: r}} }
	tests := []struct {
		name string
		sel  *rpc.ProcessSelector
		pty  *rpc.PTY
		code string
	}{
		{"resize", byPid(ptyPid), size(132, 43), "ok"},
		{"no pty field is a no-op", byPid(ptyPid), nil, "ok"},
		{"zero size", byPid(ptyPid), size(0, 0), "invalid_argument"},
		{"too large", byPid(ptyPid), size(1<<17, 10), "invalid_argument"},
		{"piped process", byPid(pipePid), size(10, 10), "failed_precondition"},
		{"unknown", byPid(1 << 30), size(10, 10), "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.Update(context.Background(), connect.NewRequest(&rpc.UpdateRequest{Process: tc.sel, Pty: tc.pty}))
			if codeOf(err) != tc.code {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
		})
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	must(t, err)
	f.WriteString("x\n")
	f.Close()
	if r := wait(t, ptyRes); !strings.Contains(r.pty.String(), "43 132") {
		t.Fatalf("pty output %q", r.pty.String())
	}
}
