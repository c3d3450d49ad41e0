package proxy

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestIdleUpstreamBounded: the connections the proxy keeps to sandboxes
// between requests are bounded in all, not only per sandbox port. Before,
// each sandbox port kept up to 16 idle connections for 30 s, and a sandbox
// serving on many ports, asked for one port after another (one client
// connection is enough: the Host names the port), made the daemon hold one
// descriptor per port it was asked for: 20,000 ports took a daemon with the
// usual descriptor limit to EMFILE, for every tenant (measured by hand on
// runsc: docs/SECURITY.md).
func TestIdleUpstreamBounded(t *testing.T) {
	var mu sync.Mutex
	open := 0 // connections the sandbox's server holds
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open++
		case http.StateClosed, http.StateHijacked:
			open--
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	host, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	sb := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", Team: "t1"}, AgentAddr: host + ":" + port}
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{sb.ID: sb}}, "", writeErr, slog.New(slog.DiscardHandler))
	p.testPort, _ = strconv.Atoi(port) // every routed port reaches up: one pool per port all the same
	const total = 8
	p.SetLimits(Limits{PerSandbox: total, PerTeam: total, Total: total})
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)

	const ports = 100
	for i := range ports {
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/", nil)
		req.Header.Set("E2b-Sandbox-Id", sb.ID)
		req.Header.Set("E2b-Sandbox-Port", strconv.Itoa(8000+i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("port %d: %d", 8000+i, resp.StatusCode)
		}
	}
	const bound = 16 // max(Total/4, 16): Limits.idle
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := open
		mu.Unlock()
		if n <= bound {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after requests to %d ports the proxy keeps %d connections to the sandbox, want at most %d", ports, n, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
