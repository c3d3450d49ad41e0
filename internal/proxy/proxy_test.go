package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/envdsig"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

type fakeSandboxes struct {
	byID map[string]sandbox.Info
}

func (f fakeSandboxes) Get(id string) (sandbox.Info, error) {
	in, ok := f.byID[id]
	if !ok {
		return in, sandbox.ErrNotFound
	}
	return in, nil
}
func (f fakeSandboxes) List() (out []sandbox.Info) {
	for _, in := range f.byID {
		out = append(out, in)
	}
	return out
}

// AutoResume "resumes" a paused sandbox with autoResume: it becomes running.
func (f fakeSandboxes) AdoptMovedTraffic(context.Context, string) error { return sandbox.ErrNotFound }

func (f fakeSandboxes) AutoResume(_ context.Context, id string) (sandbox.Info, error) {
	in, ok := f.byID[id]
	switch {
	case !ok:
		return in, sandbox.ErrNotFound
	case in.State == "paused" && !in.Persist.AutoResume:
		return in, sandbox.ErrConflict
	}
	in.State = "running"
	f.byID[id] = in
	return in, nil
}

func writeErr(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": status, "message": msg})
}

// setup starts an upstream standing in for both sandboxes' agents (the proxy
// dials AgentAddr's host at the routed port) and returns a front server.
func setup(t testing.TB) (front *httptest.Server, a, b sandbox.Info) {
	return setupWith(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream-Path", r.URL.Path)
		w.WriteHeader(http.StatusOK)
	}))
}

// setupWith is setup with the given upstream handler.
func setupWith(t testing.TB, h http.Handler) (front *httptest.Server, a, b sandbox.Info) {
	return setupServer(t, httptest.NewUnstartedServer(h))
}

// setupServer is setup with the given upstream, started here.
func setupServer(t testing.TB, up *httptest.Server) (front *httptest.Server, a, b sandbox.Info) {
	front, _, a, b = setupProxy(t, up)
	return front, a, b
}

// setupProxy is setupServer, also returning the proxy, to be configured
// before the first request.
func setupProxy(t testing.TB, up *httptest.Server) (front *httptest.Server, p *Proxy, a, b sandbox.Info) {
	up.Start()
	t.Cleanup(up.Close)
	host, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	mk := func(tok string) sandbox.Info {
		return sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", EnvdToken: tok}, AgentAddr: host + ":" + port}
	}
	a, b = mk("token-a"), mk("token-b")
	fs := fakeSandboxes{byID: map[string]sandbox.Info{a.ID: a, b.ID: b}}
	p = New(fs, "", writeErr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// Route every port to the upstream's port for the test.
	pn, _ := strconv.Atoi(port)
	front = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.Match(r) {
			http.Error(w, "api", http.StatusTeapot)
			return
		}
		if r.Header.Get("E2b-Sandbox-Port") == "" && r.Header.Get("E2b-Sandbox-Id") != "" {
			r.Header.Set("E2b-Sandbox-Port", strconv.Itoa(EnvdPort))
		}
		p.testPort = pn
		p.ServeHTTP(w, r)
	}))
	// The server recovers a handler's panic (and net/http's own on a
	// misused body) and only logs it: any such log fails the test.
	front.Config.ErrorLog = log.New(panicLog{t}, "", 0)
	front.Start()
	t.Cleanup(front.Close)
	return front, p, a, b
}

type panicLog struct{ t testing.TB }

func (l panicLog) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "panic") {
		l.t.Errorf("front server: %s", p)
	}
	return len(p), nil
}

func TestAuthorize(t *testing.T) {
	front, a, b := setup(t)
	tests := []struct {
		name, path, id, tok string
		port                string
		want                int
	}{
		{"own token", "/process.Process/List", a.ID, "token-a", "", 200},
		{"no token", "/process.Process/List", a.ID, "", "", 401},
		{"other sandbox's token", "/process.Process/List", a.ID, "token-b", "", 401},
		{"token of a on b", "/filesystem.Filesystem/Stat", b.ID, "token-a", "", 401},
		{"init blocked", "/init", a.ID, "token-a", "", 403},
		{"init blocked dotted", "/./init", a.ID, "token-a", "", 403},
		{"init blocked double slash", "//init", a.ID, "token-a", "", 403},
		{"health open", "/health", a.ID, "", "", 200},
		{"unknown sandbox", "/health", sandbox.NewID(), "", "", 502},
		{"bad id", "/health", "../x", "", "", 400},
		{"other port public", "/", a.ID, "", "8080", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", front.URL+tt.path, nil)
			req.Header.Set("E2b-Sandbox-Id", tt.id)
			if tt.port != "" {
				req.Header.Set("E2b-Sandbox-Port", tt.port)
			}
			if tt.tok != "" {
				req.Header.Set("X-Access-Token", tt.tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

func TestSignedURLRouting(t *testing.T) {
	front, a, _ := setup(t)
	sig := url.QueryEscape(envdsig.Sign("/home/user/x.txt", "read", "", "token-a", 0))
	resp, err := http.Get(front.URL + "/files?path=/home/user/x.txt&signature=" + sig)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Upstream-Path") != "/files" {
		t.Fatalf("signed download: %d", resp.StatusCode)
	}
	// A tampered path or signature, or a write with a read signature, finds
	// no sandbox: envd's 401 {code, message: "invalid signature"}, what any
	// sandbox's envd would answer (before: 404 "sandbox not found"). An
	// expiry that is no number is a 400.
	for _, tt := range []struct {
		method, url string
		status      int
		msg         string
	}{
		{"GET", "/files?path=/etc/shadow&signature=" + sig, 401, "invalid signature"},
		{"GET", "/files?path=/home/user/x.txt&signature=v1_forged", 401, "invalid signature"},
		{"POST", "/files?path=/home/user/x.txt&signature=" + sig, 401, "invalid signature"},
		{"GET", "/files?path=/home/user/x.txt&signature_expiration=soon&signature=" + sig, 400, "invalid signature_expiration"},
	} {
		req, _ := http.NewRequest(tt.method, front.URL+tt.url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || body.Code != tt.status || body.Message != tt.msg {
			t.Errorf("%s %s: %d %+v, want %d %q", tt.method, tt.url, resp.StatusCode, body, tt.status, tt.msg)
		}
	}
	_ = a
}

// TestStreamSurvivesEarlyResponse: an upstream that answers (and flushes)
// before it has read the whole request body — as Connect server streams may —
// must not have its response cut. The HTTP/1 server closes an unread inbound
// body once the response starts, which made the transport's request writer
// fail and tear down the upstream connection mid-response ("use of closed
// network connection").
func TestStreamSurvivesEarlyResponse(t *testing.T) {
	front, a, _ := setupWith(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "read %d %v", n, err)
	}))
	body := strings.Repeat("x", 4<<20)
	for i := 0; i < 20; i++ {
		req, _ := http.NewRequest(http.MethodPost, front.URL+"/process.Process/Start", strings.NewReader(body))
		req.Header.Set("E2b-Sandbox-Id", a.ID)
		req.Header.Set("X-Access-Token", a.EnvdToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != fmt.Sprintf("read %d <nil>", len(body)) {
			t.Fatalf("round %d: body %q, err %v", i, got, err)
		}
	}
}

// TestBodyStillSendingAfterResponse: an upstream that answers without reading
// the request body ends the handler while the transport is still copying
// that body; the body's last chunk arrives only after the whole response came
// back, and the connection then carries another request. Nothing may panic
// (panicLog) and the answer must be whole. (The race the cutBody closes —
// a body read reaching its end after the server began reusing the
// connection's reader — is timing-dependent; TestCutBody* pin the mechanism.)
func TestBodyStillSendingAfterResponse(t *testing.T) {
	front, a, _ := setupWith(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex() // answer before the body's end
		_, _ = io.WriteString(w, "early")
	}))
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", front.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /process.Process/Start HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\n"+
			"X-Access-Token: %s\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n", a.ID, a.EnvdToken)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if string(got) != "early" {
			t.Fatalf("round %d: body %q", i, got)
		}
		_, _ = io.WriteString(c, "0\r\n\r\n") // the body ends after the response did
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\n\r\n", a.ID)
		if resp, err := http.ReadResponse(br, nil); err == nil { // the front may also close it
			resp.Body.Close()
		}
		c.Close()
	}
}

// TestMaskRequestHost: a sandbox's network.maskRequestHost is the Host its
// ports see, ${PORT} the port; envd's port keeps the client's Host.
func TestMaskRequestHost(t *testing.T) {
	hosts := make(chan string, 2)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
	}))
	up.Start()
	t.Cleanup(up.Close)
	host, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	pn, _ := strconv.Atoi(port)
	in := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", EnvdToken: "tok",
		Network: &store.Network{MaskRequestHost: "custom-host.example.com:${PORT}"}}, AgentAddr: host + ":" + port}
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{in.ID: in}}, "", writeErr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.testPort = pn
	for _, tt := range []struct {
		port int
		want string
	}{{8080, "custom-host.example.com:8080"}, {EnvdPort, "client.example"}} {
		req := httptest.NewRequest("GET", "http://client.example/health", nil)
		req.Header.Set("E2b-Sandbox-Id", in.ID)
		req.Header.Set("E2b-Sandbox-Port", strconv.Itoa(tt.port))
		req.Header.Set("X-Access-Token", "tok")
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("port %d: status %d %s", tt.port, w.Code, w.Body)
		}
		if got := <-hosts; got != tt.want {
			t.Errorf("port %d: the sandbox saw Host %q, want %q", tt.port, got, tt.want)
		}
	}
}

// TestHTTPSPorts: a port in the sandbox's network.httpsPorts is reached over
// TLS (its self-signed certificate accepted); others stay plain HTTP.
func TestHTTPSPorts(t *testing.T) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "https backend")
	}))
	up.Config.ErrorLog = log.New(io.Discard, "", 0) // the plain-HTTP case's handshake error is expected
	up.StartTLS()
	t.Cleanup(up.Close)
	host, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	pn, _ := strconv.Atoi(port)
	in := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running",
		Network: &store.Network{HTTPSPorts: []int{8443}}}, AgentAddr: host + ":" + port}
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{in.ID: in}}, "", writeErr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.testPort = pn
	for _, tt := range []struct {
		port int
		want int
	}{{8443, 200}, {8080, 400}} { // a TLS server answers plain HTTP with 400
		req := httptest.NewRequest("GET", "http://client.example/", nil)
		req.Header.Set("E2b-Sandbox-Id", in.ID)
		req.Header.Set("E2b-Sandbox-Port", strconv.Itoa(tt.port))
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
		if w.Code != tt.want || tt.want == 200 && w.Body.String() != "https backend" {
			t.Errorf("port %d: %d %q, want %d", tt.port, w.Code, w.Body, tt.want)
		}
	}
}
