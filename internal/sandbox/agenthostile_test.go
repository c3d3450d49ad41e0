package sandbox

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// TestAgentRedirectNotFollowed: an agent is the sandbox's (root inside can
// replace it), so its redirects are never followed. A fake agent answering
// /health, /init and a command (warm-up, template start and ready
// commands) with every redirect code must not make the daemon dial
// the place it names (a host service, another sandbox's agent) nor resend
// the init token and body there; the answer counts as a failure.
func TestAgentRedirectNotFollowed(t *testing.T) {
	var hits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer elsewhere.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, code)
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := health(ctx, agent.URL); err == nil {
			t.Errorf("%d: /health redirected elsewhere counted as healthy", code)
		}
		for _, c := range []*http.Client{agentClient, newAgentClient()} {
			if err := postInit(ctx, c, agent.URL, "secret", []byte(`{"accessToken":"tok"}`)); err == nil {
				t.Errorf("%d: /init redirected elsewhere counted as taken", code)
			}
		}
		u, _ := url.Parse(agent.URL)
		port, _ := strconv.Atoi(u.Port())
		before := hits.Load()
		if _, err := AgentConn(u.Hostname(), port, "sb", "tok").Run(ctx, client.RunRequest{Cmd: "true"}, nil, nil); err == nil {
			t.Errorf("%d: a command redirected elsewhere counted as run", code)
		}
		if hits.Load() != before {
			t.Errorf("%d: a command's request followed the agent's redirect", code)
		}
		cancel()
		agent.Close()
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the daemon followed an agent's redirect %d times", n)
	}
}

// bigHeaderAgent answers every request with a 2xx whose header holds size
// bytes (an agent replaced by root inside chooses its answers).
func bigHeaderAgent(t *testing.T, size int) *httptest.Server {
	t.Helper()
	big := strings.Repeat("a", 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i*len(big) < size; i++ {
			w.Header().Add("X-Big", big)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestAgentHeaderBounded: the daemon's own requests to an agent (/health,
// /init over both its clients, its commands) read a response header up to
// untrusted.MaxHeaderBytes, the proxy's bound; past it the answer is a
// failure. Before, they took up to net/http's 10 MiB, bounded only by
// their timeouts.
func TestAgentHeaderBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if small := bigHeaderAgent(t, 16<<10); health(ctx, small.URL) != nil {
		t.Fatal("a 16 KiB header was refused")
	}
	agent := bigHeaderAgent(t, 2<<20)
	if err := health(ctx, agent.URL); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("/health with a 2 MiB header: %v, want a header error", err)
	}
	for _, c := range []*http.Client{agentClient, newAgentClient()} {
		if err := postInit(ctx, c, agent.URL, "secret", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "header") {
			t.Errorf("/init with a 2 MiB header: %v, want a header error", err)
		}
	}
	u, _ := url.Parse(agent.URL)
	port, _ := strconv.Atoi(u.Port())
	_, err := AgentConn(u.Hostname(), port, "sb", "tok").Run(ctx, client.RunRequest{Cmd: "true"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("a command answered with a 2 MiB header: %v, want a header error", err)
	}
}
