package proxy

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestPaused: traffic for a paused sandbox gets E2B's 409 "The sandbox is
// paused" unless it asked for autoResume; then the request waits for the
// resume and reaches the sandbox.
func TestPaused(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer up.Close()
	host, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	mk := func(auto bool) sandbox.Info {
		return sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "paused", EnvdToken: "tok",
			Persist: store.Persistence{AutoResume: auto}}, AgentAddr: host + ":" + port}
	}
	plain, auto := mk(false), mk(true)
	fs := fakeSandboxes{byID: map[string]sandbox.Info{plain.ID: plain, auto.ID: auto}}
	p := New(fs, "", writeErr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.testPort, _ = strconv.Atoi(port)
	front := httptest.NewServer(p)
	defer front.Close()
	get := func(id, tok string) *http.Response {
		req, _ := http.NewRequest("GET", front.URL+"/process.Process/List", nil)
		req.Header.Set("E2b-Sandbox-Id", id)
		req.Header.Set("X-Access-Token", tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get(plain.ID, "tok")
	var body pausedError
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 409 || body.Code != 409 || body.SandboxID != plain.ID || body.Message != "The sandbox is paused" {
		t.Fatalf("paused: %d %+v", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", front.URL+"/health", nil)
	req.Header.Set("E2b-Sandbox-Id", plain.ID)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 502 {
		t.Fatalf("health of a paused sandbox: %v %v, want 502 (SDK isRunning false)", resp, err)
	}
	if resp := get(auto.ID, "bad"); resp.StatusCode != 401 || fs.byID[auto.ID].State != "paused" {
		t.Fatalf("unauthenticated traffic must not resume: %d %s", resp.StatusCode, fs.byID[auto.ID].State)
	}
	if resp := get(auto.ID, "tok"); resp.StatusCode != 200 || fs.byID[auto.ID].State != "running" {
		t.Fatalf("autoResume: %d %s", resp.StatusCode, fs.byID[auto.ID].State)
	}
}
