package proxy

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestClosedPort: traffic to a port nothing listens on in a running sandbox
// is 502 saying so by the port asked for, as E2B's proxy does ("The sandbox
// is running but port is not open"), without the sandbox's internal address.
func TestClosedPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	in := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", EnvdToken: "tok"}, AgentAddr: "127.0.0.1:1"}
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{in.ID: in}}, "", writeErr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.testPort = closed
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("E2b-Sandbox-Id", in.ID)
	req.Header.Set("E2b-Sandbox-Port", "8080")
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	var body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	if rec.Code != http.StatusBadGateway || body.Code != 502 || body.Message != "the sandbox is running but port 8080 is not open: dial: connect: connection refused" {
		t.Fatalf("closed port: %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "127.0.0.1") {
		t.Errorf("the answer names the sandbox's address: %s", rec.Body)
	}
}
