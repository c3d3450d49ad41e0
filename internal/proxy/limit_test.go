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

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestOpenRequestsBounded: requests held open by a sandbox's server count
// per sandbox, per team and in all; past a bound the next gets 429 with
// Retry-After and nothing is dialled, a request of another team still
// passes, and a bound's room comes back as held requests end. Before, a
// server that never answered let one tenant hold 12,000 requests (and
// descriptors) of the daemon.
func TestOpenRequestsBounded(t *testing.T) {
	arrived, release := make(chan struct{}, 100), make(chan struct{})
	dialled := make(chan struct{}, 100)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dialled <- struct{}{}
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			<-release
		}
	}))
	up.Start()
	t.Cleanup(up.Close)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	host, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	mk := func(team string) sandbox.Info {
		return sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", Team: team}, AgentAddr: host + ":" + port}
	}
	a, b, c := mk("t1"), mk("t1"), mk("t2")
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{a.ID: a, b.ID: b, c.ID: c}}, "", writeErr, slog.New(slog.DiscardHandler))
	p.testPort, _ = strconv.Atoi(port)
	p.SetLimits(Limits{PerSandbox: 3, PerTeam: 4, Total: 6})
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	t.Cleanup(unblock) // first: the servers' Close waits for the held requests

	get := func(sb sandbox.Info, path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, front.URL+path, nil)
		req.Header.Set("E2b-Sandbox-Id", sb.ID)
		req.Header.Set("E2b-Sandbox-Port", "8000")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	done := make(chan int, 100)
	hold := func(sb sandbox.Info) {
		go func() { s, _ := get(sb, "/hold"); done <- s }()
		<-arrived
		<-dialled
	}
	refused := func(sb sandbox.Info, why string) {
		t.Helper()
		if s, ra := get(sb, "/x"); s != http.StatusTooManyRequests || ra == "" {
			t.Fatalf("%s: %d (Retry-After %q), want 429 with Retry-After", why, s, ra)
		}
		if len(dialled) != 0 {
			t.Fatalf("%s: the refused request reached the sandbox", why)
		}
	}
	for range 3 {
		hold(a)
	}
	refused(a, "a 4th request to one sandbox")
	hold(b)
	refused(b, "a 5th request to one team")
	if s, _ := get(c, "/x"); s != http.StatusOK {
		t.Fatalf("another team's request: %d", s)
	}
	<-dialled
	hold(c)
	hold(c)
	refused(c, "a 7th request to the node")
	unblock()
	for range 6 {
		if s := <-done; s != http.StatusOK {
			t.Fatalf("held request ended with %d", s)
		}
	}
	if s, _ := get(a, "/x"); s != http.StatusOK {
		t.Fatalf("after the held requests ended: %d", s)
	}
}
