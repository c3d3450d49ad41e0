package sandboxtest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// StartAgent runs a fake agent on loopback that answers /health and accepts
// /init only with an init token; it returns its port.
func StartAgent(t testing.TB) int {
	return NewAgent(t).Port
}

// Agent is a fake agent (see StartAgent) that records what it was sent.
type Agent struct {
	Port  int
	mu    sync.Mutex
	inits []string
	conns int
}

// NewAgent starts a fake agent; it stops at the end of the test.
func NewAgent(t testing.TB) *Agent {
	a := &Agent{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			a.mu.Lock()
			a.conns++
			a.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	a.Port, _ = strconv.Atoi(p)
	return a
}

func (a *Agent) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		w.WriteHeader(http.StatusNoContent)
	case "/init":
		if r.Header.Get("X-Sbx-Init-Token") == "" {
			http.Error(w, "no init token", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.inits = append(a.inits, string(b))
		a.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("X-Fake-Agent", r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	}
}

// Inits returns the bodies of the /init requests taken so far.
func (a *Agent) Inits() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.inits...)
}

// Conns counts the connections accepted so far.
func (a *Agent) Conns() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conns
}
