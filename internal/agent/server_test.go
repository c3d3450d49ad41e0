package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	fsrpc "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/api/proto/envd/filesystem/filesystemconnect"
	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
	"github.com/sbx-dev/sbx/api/proto/envd/process/processconnect"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// agentEnv is a real server on a loopback port with its own passwd (root
// only, home in a temp dir).
type agentEnv struct {
	srv   *Server
	url   string
	state *identity.State
	dir   string
}

func newAgent(t testing.TB, cfg Config) *agentEnv {
	t.Helper()
	dir := t.TempDir()
	cfg.Users = identity.Files{Passwd: filepath.Join(dir, "passwd"), Group: filepath.Join(dir, "group")}
	must(t, os.WriteFile(cfg.Users.Passwd, []byte("root:x:0:0:root:"+dir+":/bin/sh\n"), 0o644))
	must(t, os.WriteFile(cfg.Users.Group, []byte("root:x:0:\n"), 0o644))
	if cfg.State == nil {
		cfg.State = identity.NewState()
		cfg.State.Apply(identity.Init{DefaultUser: "root"})
	}
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := NewServer(cfg)
	must(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return &agentEnv{srv: srv, url: "http://" + l.Addr().String(), state: cfg.State, dir: dir}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// do sends one HTTP request and returns the status and body.
func (a *agentEnv) do(t testing.TB, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	must(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}}
}

// withToken adds X-Access-Token to every request of a Connect client.
func withToken(token string) connect.ClientOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if token != "" {
				req.Header().Set("X-Access-Token", token)
			}
			return next(ctx, req)
		}
	}), streamToken(token))
}

type streamToken string

func (s streamToken) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }
func (s streamToken) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		if s != "" {
			conn.RequestHeader().Set("X-Access-Token", string(s))
		}
		return conn
	}
}
func (s streamToken) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func TestAuth(t *testing.T) {
	a := newAgent(t, Config{})
	a.state.Apply(identity.Init{AccessToken: ptr("s3cret")})
	tests := []struct {
		name, method, path, token string
		status                    int
		body                      string // substring of the body
	}{
		{"health needs nothing", "GET", "/health", "", 204, ""},
		{"envs without token", "GET", "/envs", "", 401, `"code":401`},
		{"envs with wrong token", "GET", "/envs", "s3cre", 401, `"code":401`},
		{"envs with token", "GET", "/envs", "s3cret", 200, "{}"},
		{"metrics without token", "GET", "/metrics", "", 401, `"code":401`},
		{"metrics with token", "GET", "/metrics", "s3cret", 200, `"cpu_count"`},
		{"files checks for itself", "GET", "/files?path=/etc/hostname", "", 401, "signature"},
		{"unknown path without token", "GET", "/nope", "", 401, `"code":401`},
		{"unknown path with token", "GET", "/nope", "s3cret", 404, `"code":404`},
		{"rpc without token", "POST", "/process.Process/List", "", 401, `"code":"unauthenticated"`},
		{"rpc with token", "POST", "/process.Process/List", "s3cret", 200, "{}"},
		{"filesystem rpc without token", "POST", "/filesystem.Filesystem/Stat", "", 401, `"code":"unauthenticated"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h []string
			if tc.token != "" {
				h = append(h, "X-Access-Token", tc.token)
			}
			if strings.Contains(tc.path, ".") && tc.method == "POST" {
				h = append(h, "Content-Type", "application/json")
			}
			body := ""
			if tc.method == "POST" {
				body = "{}"
			}
			status, got := a.do(t, tc.method, tc.path, body, h...)
			if status != tc.status || !strings.Contains(got, tc.body) {
				t.Fatalf("got %d %q, want %d with %q", status, got, tc.status, tc.body)
			}
		})
	}
	// Streaming RPCs and both encodings, through real Connect clients.
	for _, opts := range [][]connect.ClientOption{{connect.WithProtoJSON()}, nil} {
		proc := processconnect.NewProcessClient(h2cClient(), a.url, opts...)
		stream, err := proc.Start(context.Background(), connect.NewRequest(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/true"}}))
		if err == nil {
			for stream.Receive() {
				t.Fatal("got an event without a token")
			}
			err = stream.Err()
		}
		if connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Fatalf("Start without token: %v", err)
		}
		fs := filesystemconnect.NewFilesystemClient(h2cClient(), a.url, append(opts, withToken("wrong"))...)
		if _, err := fs.Stat(context.Background(), connect.NewRequest(&fsrpc.StatRequest{Path: "/"})); connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Fatalf("Stat with a wrong token: %v", err)
		}
		fs = filesystemconnect.NewFilesystemClient(h2cClient(), a.url, append(opts, withToken("s3cret"))...)
		if _, err := fs.Stat(context.Background(), connect.NewRequest(&fsrpc.StatRequest{Path: "/"})); err != nil {
			t.Fatalf("Stat with the token: %v", err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestInit(t *testing.T) {
	body := `{"accessToken":"tok","envVars":{"A":"1"},"defaultUser":"root","defaultWorkdir":"/tmp",` +
		`"timestamp":"2026-01-01T00:00:00Z","volumeMounts":[],"hyperloopIP":"10.0.0.1","lifecycleID":"x"}`
	t.Run("daemon secret", func(t *testing.T) {
		a := newAgent(t, Config{InitToken: "daemon-secret"})
		steps := []struct {
			name    string
			headers []string
			body    string
			status  int
		}{
			{"no secret", nil, body, 401},
			{"wrong secret", []string{"X-Sbx-Init-Token", "daemon-secre"}, body, 401},
			{"the access token is not enough", []string{"X-Access-Token", ""}, body, 401},
			{"secret", []string{"X-Sbx-Init-Token", "daemon-secret"}, body, 204},
			{"access token after init is not enough", []string{"X-Access-Token", "tok"}, `{"accessToken":"x"}`, 401},
			{"bad json", []string{"X-Sbx-Init-Token", "daemon-secret"}, `{"envVars":`, 400},
			{"empty body", []string{"X-Sbx-Init-Token", "daemon-secret"}, ``, 204},
		}
		for _, s := range steps {
			if status, got := a.do(t, "POST", "/init", s.body, s.headers...); status != s.status {
				t.Fatalf("%s: %d %s, want %d", s.name, status, got, s.status)
			}
		}
		if a.state.Token() != "tok" || a.state.Envs()["A"] != "1" || a.state.DefaultWorkdir() != "/tmp" {
			t.Fatalf("state not applied: %q %v", a.state.Token(), a.state.Envs())
		}
		if status, got := a.do(t, "GET", "/envs", "", "X-Access-Token", "tok"); status != 200 || strings.TrimSpace(got) != `{"A":"1"}` {
			t.Fatalf("envs: %d %s", status, got)
		}
		if status, _ := a.do(t, "GET", "/init", ""); status != 401 {
			t.Fatalf("GET /init without token: %d", status)
		}
	})
	t.Run("debug mode", func(t *testing.T) {
		a := newAgent(t, Config{})
		steps := []struct {
			name    string
			headers []string
			body    string
			status  int
		}{
			{"no token yet", nil, body, 204},
			{"token set: none sent", nil, `{"envVars":{}}`, 401},
			{"token set: wrong one", []string{"X-Access-Token", "nope"}, `{"envVars":{}}`, 401},
			{"token set: the current one", []string{"X-Access-Token", "tok"}, `{"envVars":{"B":"2"}}`, 204},
		}
		for _, s := range steps {
			if status, got := a.do(t, "POST", "/init", s.body, s.headers...); status != s.status {
				t.Fatalf("%s: %d %s, want %d", s.name, status, got, s.status)
			}
		}
		if env := a.state.Envs(); env["B"] != "2" || len(env) != 1 {
			t.Fatalf("envs %v", env)
		}
	})
}

func TestHealthAndH2C(t *testing.T) {
	a := newAgent(t, Config{})
	for _, c := range []struct {
		client *http.Client
		major  int
	}{{http.DefaultClient, 1}, {h2cClient(), 2}} {
		resp, err := c.client.Get(a.url + "/health")
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 204 || resp.ProtoMajor != c.major {
			t.Fatalf("health: %d over HTTP/%d, want 204 over HTTP/%d", resp.StatusCode, resp.ProtoMajor, c.major)
		}
	}
	if a.srv.http.ReadHeaderTimeout == 0 || a.srv.http.WriteTimeout != 0 || a.srv.http.IdleTimeout == 0 {
		t.Fatal("timeouts: want a header timeout, an idle timeout, and no write timeout")
	}
}

// A command through the whole server: auth, routing, both protocols.
func TestProcessThroughServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	a := newAgent(t, Config{})
	a.state.Apply(identity.Init{AccessToken: ptr("tok"), EnvVars: map[string]string{"GREETING": "hi"}})
	for name, client := range map[string]*http.Client{"http1": http.DefaultClient, "h2c": h2cClient()} {
		t.Run(name, func(t *testing.T) {
			proc := processconnect.NewProcessClient(client, a.url, connect.WithProtoJSON(), withToken("tok"))
			stream, err := proc.Start(context.Background(), connect.NewRequest(&rpc.StartRequest{
				Process: &rpc.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", "echo $GREETING; pwd"}}}))
			must(t, err)
			var out strings.Builder
			var end *rpc.ProcessEvent_EndEvent
			for stream.Receive() {
				out.Write(stream.Msg().GetEvent().GetData().GetStdout())
				if e := stream.Msg().GetEvent().GetEnd(); e != nil {
					end = e
				}
			}
			must(t, stream.Err())
			if out.String() != "hi\n"+a.dir+"\n" || end.GetStatus() != "exit status 0" {
				t.Fatalf("out %q end %v", out.String(), end)
			}
		})
	}
}

func TestMetricsJSON(t *testing.T) {
	a := newAgent(t, Config{})
	status, body := a.do(t, "GET", "/metrics", "")
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var m map[string]any
	must(t, json.Unmarshal([]byte(body), &m))
	for _, k := range []string{"ts", "cpu_count", "cpu_used_pct", "mem_total", "mem_used", "mem_cache",
		"mem_total_mib", "mem_used_mib", "disk_used", "disk_total"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %s in %s", k, body)
		}
	}
	if m["mem_total"].(float64) <= 0 || m["disk_total"].(float64) <= 0 || m["cpu_count"].(float64) < 1 {
		t.Fatalf("implausible metrics %s", body)
	}
}
