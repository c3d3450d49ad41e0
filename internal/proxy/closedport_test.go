package proxy

import (
	"encoding/json"
	"log/slog"
	"maps"
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
// whose one sandbox's agent is at host, the proxy dialling port instead;
// ua is the request's User-Agent.
func askSandbox(host string, port int, ua ...string) (*httptest.ResponseRecorder, string) {
	sb := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", Team: "t"}, AgentAddr: host + ":" + strconv.Itoa(port)}
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{sb.ID: sb}}, "", writeErr, slog.New(slog.DiscardHandler))
	p.testPort = port
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set("E2b-Sandbox-Id", sb.ID)
	req.Header.Set("E2b-Sandbox-Port", "8000")
	for _, u := range ua {
		req.Header.Set("User-Agent", u)
	}
	p.ServeHTTP(rec, req)
	return rec, sb.ID
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return closed
}

// TestClosedPort: traffic to a port nothing listens on in a running sandbox
// is E2B's 502 as its SDK tests read it (closed_port.test.ts): message "The
// sandbox is running but port is not open", the sandbox's id and the port
// asked for, and no address of the connection (the sandbox's IP on the
// host's sandbox subnet and the daemon's are not the caller's to learn).
// Before, the message was sbx's own ("the sandbox is running but port 8000
// is not open: dial: ...") and there were no sandboxId and port.
func TestClosedPort(t *testing.T) {
	closed := closedPort(t)
	rec, id := askSandbox("127.0.0.2", closed)
	var body struct {
		Code      int    `json:"code"`
		Message   string `json:"message"`
		SandboxID string `json:"sandboxId"`
		Port      int    `json:"port"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	if rec.Code != http.StatusBadGateway || body.Code != 502 || body.Message != "The sandbox is running but port is not open" || body.SandboxID != id || body.Port != 8000 {
		t.Fatalf("closed port: %d %s", rec.Code, rec.Body)
	}
	if s := rec.Body.String(); strings.Contains(s, "127.0.0.2") || strings.Contains(s, strconv.Itoa(closed)) {
		t.Errorf("the answer names an address: %s", s)
	}
}

// TestClosedPortBrowser: a browser gets E2B's HTML page for a closed port
// (titled "Closed Port Error", as E2B's SDK test checks), not JSON.
func TestClosedPortBrowser(t *testing.T) {
	ua := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/91.0 Safari/537.36"
	rec, id := askSandbox("127.0.0.2", closedPort(t), ua)
	s := rec.Body.String()
	if rec.Code != http.StatusBadGateway || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(s, "<title>Closed Port Error</title>") || !strings.Contains(s, id) || !strings.Contains(s, "8000") {
		t.Fatalf("closed port to a browser: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), s)
	}
}

// TestSandboxNotFound: traffic for a sandbox the proxy does not have (one
// that ended looks the same as one never made to it), is E2B's 502 {sandboxId,
// message: "The sandbox was not found", code: 502} as its host.test.ts reads
// it, and a page to a browser. Before, an ended one was 502 "sandbox is not
// running" and an unknown one 404 "sandbox not found", neither with the id.
func TestSandboxNotFound(t *testing.T) {
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{}}, "", writeErr, slog.New(slog.DiscardHandler))
	for _, id := range []string{sandbox.NewID(), "x" + sandbox.NewID()[1:]} {
		for _, ua := range []string{"node", "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/health", nil)
			req.Header.Set("E2b-Sandbox-Id", id)
			req.Header.Set("E2b-Sandbox-Port", "49983")
			req.Header.Set("User-Agent", ua)
			p.ServeHTTP(rec, req)
			if rec.Code != http.StatusBadGateway {
				t.Fatalf("%s (%s): %d, want 502", id, ua, rec.Code)
			}
			if ua != "node" {
				if s := rec.Body.String(); !strings.Contains(s, "<title>Sandbox Not Found</title>") || !strings.Contains(s, id) {
					t.Fatalf("%s to a browser: %s", id, s)
				}
				continue
			}
			var body map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			want := map[string]any{"sandboxId": id, "message": "The sandbox was not found", "code": float64(502)}
			if !maps.Equal(body, want) {
				t.Fatalf("%s: %s, want %v", id, rec.Body, want)
			}
		}
	}
}
