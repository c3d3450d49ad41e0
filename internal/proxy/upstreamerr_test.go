package proxy

import (
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

// TestUpstreamErrorHidesAddresses: a 502 for a sandbox port that does not
// answer says why (connection refused) without the addresses of the
// connection: the sandbox's IP on the host's sandbox subnet and the
// daemon's own address are not the caller's to learn. Before, the message
// was the dial error whole ("dial tcp 10.11.0.6:8080: connect: ...").
func TestUpstreamErrorHidesAddresses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there now
	sb := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", Team: "t"}, AgentAddr: "127.0.0.2:" + strconv.Itoa(port)}
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{sb.ID: sb}}, "", writeErr, slog.New(slog.DiscardHandler))
	p.testPort = port
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set("E2b-Sandbox-Id", sb.ID)
	req.Header.Set("E2b-Sandbox-Port", "8000")
	p.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != http.StatusBadGateway || !strings.Contains(body, "connection refused") {
		t.Fatalf("%d %s, want 502 naming the refused connection", rec.Code, body)
	}
	if strings.Contains(body, "127.0.0.2") || strings.Contains(body, strconv.Itoa(port)) {
		t.Fatalf("the 502 names an address: %s", body)
	}
}
