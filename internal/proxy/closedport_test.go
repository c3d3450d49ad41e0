package proxy

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// askSandbox sends GET /x to port 8000 of a running sandbox through a proxy
// whose one sandbox's agent is at host, the proxy dialling port instead.
func askSandbox(host string, port int) *httptest.ResponseRecorder {
	sb := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", Team: "t"}, AgentAddr: host + ":" + strconv.Itoa(port)}
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{sb.ID: sb}}, "", writeErr, slog.New(slog.DiscardHandler))
	p.testPort = port
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set("E2b-Sandbox-Id", sb.ID)
	req.Header.Set("E2b-Sandbox-Port", "8000")
	p.ServeHTTP(rec, req)
	return rec
}

// TestClosedPort: traffic to a port nothing listens on in a running sandbox
// is 502 saying so by the port asked for, as E2B's proxy does ("The sandbox
// is running but port is not open"), with the cause and without the
// addresses of the connection: the sandbox's IP on the host's sandbox
// subnet and the daemon's are not the caller's to learn. Before, the
// message was the dial error whole ("dial tcp 10.11.0.6:8080: connect: ...").
func TestClosedPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	rec := askSandbox("127.0.0.2", closed)
	var body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	if rec.Code != http.StatusBadGateway || body.Code != 502 || body.Message != "the sandbox is running but port 8000 is not open: dial: connect: connection refused" {
		t.Fatalf("closed port: %d %s", rec.Code, rec.Body)
	}
	if s := rec.Body.String(); strings.Contains(s, "127.0.0.2") || strings.Contains(s, strconv.Itoa(closed)) {
		t.Errorf("the answer names an address: %s", s)
	}
}
