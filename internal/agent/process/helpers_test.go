package process

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
	"github.com/sbx-dev/sbx/api/proto/envd/process/processconnect"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

func TestMain(m *testing.M) {
	// As in the agent: this test binary reaps every child, orphans included.
	if err := EnableSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "subreaper:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// env is a service over real HTTP with its own passwd/group: root, "user"
// (uid 1000, home <tmp>/home/user) and nobody.
type env struct {
	dir, home string
	url       string // the service's test server
	state     *identity.State
	svc       *Service
	client    processconnect.ProcessClient // JSON, like the E2B SDK
	binary    processconnect.ProcessClient // protobuf
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (runs processes as other users)")
	}
	dir, err := os.MkdirTemp("", "sbx-process-test-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	home := filepath.Join(dir, "home", "user")
	must(t, os.MkdirAll(home, 0o755))
	must(t, os.Chown(home, 1000, 1000))
	must(t, os.MkdirAll(filepath.Join(dir, "root"), 0o700))
	users := identity.Files{Passwd: filepath.Join(dir, "passwd"), Group: filepath.Join(dir, "group")}
	must(t, os.WriteFile(users.Passwd, []byte("root:x:0:0:root:"+dir+"/root:/bin/sh\n"+
		"user:x:1000:1000::"+home+":/bin/bash\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"), 0o644))
	must(t, os.WriteFile(users.Group, []byte("root:x:0:\nuser:x:1000:\nextra:x:1234:user\nnogroup:x:65534:\n"), 0o644))
	st := identity.NewState()
	svc := New(st, users)
	t.Cleanup(func() { svc.Close(5 * time.Second) })
	mux := http.NewServeMux()
	mux.Handle(processconnect.NewProcessHandler(svc))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{
		dir: dir, home: home, url: srv.URL, state: st, svc: svc,
		client: processconnect.NewProcessClient(srv.Client(), srv.URL, connect.WithProtoJSON()),
		binary: processconnect.NewProcessClient(srv.Client(), srv.URL),
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// sh is a StartRequest for /bin/sh -c script.
func sh(script string) *rpc.StartRequest {
	return &rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", script}}}
}

// call sets the Basic auth user (when not "") and extra headers, as the SDK does.
func call[T any](msg *T, user string, headers ...string) *connect.Request[T] {
	req := connect.NewRequest(msg)
	if user != "" {
		req.Header().Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":")))
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header().Set(headers[i], headers[i+1])
	}
	return req
}

// result is everything one stream delivered.
type result struct {
	pid                 uint32
	stdout, stderr, pty strings.Builder
	keepalives          int
	end                 *rpc.ProcessEvent_EndEvent
	order               []string // event kinds in order
	err                 error    // the stream's error
}

// collect reads a Start or Connect stream to its end.
func collect(t testing.TB, recv func() (*rpc.ProcessEvent, bool), streamErr func() error) *result {
	t.Helper()
	r := &result{}
	for {
		ev, ok := recv()
		if !ok {
			break
		}
		switch e := ev.GetEvent().(type) {
		case *rpc.ProcessEvent_Start:
			r.pid = e.Start.GetPid()
			r.order = append(r.order, "start")
		case *rpc.ProcessEvent_Data:
			r.stdout.Write(e.Data.GetStdout())
			r.stderr.Write(e.Data.GetStderr())
			r.pty.Write(e.Data.GetPty())
			if len(r.order) == 0 || r.order[len(r.order)-1] != "data" {
				r.order = append(r.order, "data")
			}
		case *rpc.ProcessEvent_Keepalive:
			r.keepalives++
			r.order = append(r.order, "keepalive")
		case *rpc.ProcessEvent_End:
			r.end = e.End
			r.order = append(r.order, "end")
		}
	}
	r.err = streamErr()
	return r
}

// start runs a Start stream to its end.
func (e *env) start(t testing.TB, ctx context.Context, req *connect.Request[rpc.StartRequest]) *result {
	t.Helper()
	stream, err := e.client.Start(ctx, req)
	if err != nil {
		return &result{err: err}
	}
	defer stream.Close()
	return collect(t, func() (*rpc.ProcessEvent, bool) {
		if !stream.Receive() {
			return nil, false
		}
		return stream.Msg().GetEvent(), true
	}, stream.Err)
}

// run starts script as user with a 30 s lifetime and waits for its end.
func (e *env) run(t testing.TB, script, user string) *result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := e.start(t, ctx, call(sh(script), user))
	if r.err != nil {
		t.Fatalf("%q: %v", script, r.err)
	}
	return r
}

// started starts req and returns once the start event arrived; the stream
// keeps being read in the background until the returned stop is called.
func (e *env) started(t testing.TB, req *connect.Request[rpc.StartRequest]) (pid uint32, res <-chan *result, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := e.client.Start(ctx, req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if !stream.Receive() || stream.Msg().GetEvent().GetStart() == nil {
		cancel()
		t.Fatalf("no start event: %v", stream.Err())
	}
	pid = stream.Msg().GetEvent().GetStart().GetPid()
	ch := make(chan *result, 1)
	go func() {
		defer stream.Close()
		ch <- collect(t, func() (*rpc.ProcessEvent, bool) {
			if !stream.Receive() {
				return nil, false
			}
			return stream.Msg().GetEvent(), true
		}, stream.Err)
	}()
	t.Cleanup(cancel)
	return pid, ch, cancel
}

func wait(t testing.TB, ch <-chan *result) *result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("stream did not end")
		return nil
	}
}

func codeOf(err error) string {
	if err == nil {
		return "ok"
	}
	return connect.CodeOf(err).String()
}

func byPid(pid uint32) *rpc.ProcessSelector {
	return &rpc.ProcessSelector{Selector: &rpc.ProcessSelector_Pid{Pid: pid}}
}

func byTag(tag string) *rpc.ProcessSelector {
	return &rpc.ProcessSelector{Selector: &rpc.ProcessSelector_Tag{Tag: tag}}
}

// eventually polls cond for up to 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func (e *env) listed(t testing.TB) map[uint32]*rpc.ProcessInfo {
	t.Helper()
	resp, err := e.client.List(context.Background(), connect.NewRequest(&rpc.ListRequest{}))
	must(t, err)
	m := map[uint32]*rpc.ProcessInfo{}
	for _, p := range resp.Msg.GetProcesses() {
		m[p.GetPid()] = p
	}
	return m
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
