package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// fakeAgent is an agent whose /health and /x answer only when told:
// healthy answers /health at once; /x waits for xAfter, then sends its
// header and trickles its body for bodyFor.
type fakeAgent struct {
	healthy     atomic.Bool
	xAfter      time.Duration
	bodyFor     time.Duration
	healthAsked atomic.Int32
	release     chan struct{}
	releaseOnce sync.Once
	proxy       *Proxy
	id          string
	token       string
}

func newFakeAgent(t testing.TB, st Stall) *fakeAgent {
	a := &fakeAgent{release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(func() { a.releaseOnce.Do(func() { close(a.release) }); srv.Close() })
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	in := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", EnvdToken: "tok"}, AgentAddr: host + ":" + port}
	a.proxy = New(fakeSandboxes{byID: map[string]sandbox.Info{in.ID: in}}, "", writeErr, slog.New(slog.DiscardHandler))
	a.proxy.testPort, _ = strconv.Atoi(port)
	a.proxy.SetStall(st)
	a.id, a.token = in.ID, in.EnvdToken
	return a
}

func (a *fakeAgent) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" {
		a.healthAsked.Add(1)
		if !a.healthy.Load() {
			<-a.release
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	wait := a.xAfter
	if d, err := time.ParseDuration(r.URL.Query().Get("wait")); err == nil {
		wait = d
	}
	select {
	case <-time.After(wait):
	case <-a.release:
		return
	}
	w.WriteHeader(http.StatusOK)
	for end := time.Now().Add(a.bodyFor); ; time.Sleep(10 * time.Millisecond) {
		_, _ = io.WriteString(w, ".")
		w.(http.Flusher).Flush()
		if time.Now().After(end) {
			return
		}
	}
}

// ask sends GET /x to the agent's port through the proxy, from a client
// that gives up after 3 s.
func (a *fakeAgent) ask(port int) *httptest.ResponseRecorder { return a.askPath(port, "/x") }

// askPath is ask for path (/x?wait=<duration> overrides xAfter).
func (a *fakeAgent) askPath(port int, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	req.Header.Set("E2b-Sandbox-Id", a.id)
	req.Header.Set("E2b-Sandbox-Port", strconv.Itoa(port))
	req.Header.Set("X-Access-Token", a.token)
	a.proxy.ServeHTTP(rec, req)
	return rec
}

var quickStall = Stall{After: 100 * time.Millisecond, Probe: 100 * time.Millisecond, Probes: 2}

// TestStalledAgentFails: a request to an agent that answers neither it nor
// /health fails with 502 "not responding" once Probes probes in a row went
// unanswered (before: it waited as long as its client). Twenty such
// requests share their probes, and each is counted.
func TestStalledAgentFails(t *testing.T) {
	for _, port := range []int{EnvdPort, CodePort} {
		a := newFakeAgent(t, quickStall)
		a.xAfter = time.Hour
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				rec := a.ask(port)
				if took := time.Since(t0); rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "agent is not responding") || took > 2*time.Second {
					t.Errorf("port %d: %d %q after %v, want 502 not responding within 2s", port, rec.Code, rec.Body.String(), took)
				}
			}()
		}
		wg.Wait()
		if n := a.proxy.Unresponsive(); n != 20 {
			t.Errorf("port %d: Unresponsive() = %d, want 20", port, n)
		}
		if n := a.healthAsked.Load(); n > 4 {
			t.Errorf("port %d: %d health probes for 20 requests, want them shared (≤ 4)", port, n)
		}
	}
}

// TestSlowAgentWaitedFor: an agent that answers /health is waited for
// however late its answer (past several rounds of probes), and a response
// whose header came is never cut, however long its body takes with
// /health silent; a port that is not the agent's is never probed.
func TestSlowAgentWaitedFor(t *testing.T) {
	a := newFakeAgent(t, quickStall)
	a.healthy.Store(true)
	a.xAfter = 8 * quickStall.After
	if rec := a.ask(EnvdPort); rec.Code != http.StatusOK {
		t.Fatalf("slow but alive agent: %d %q", rec.Code, rec.Body.String())
	}
	if a.healthAsked.Load() < 2 {
		t.Errorf("%d health probes while the request waited 8 rounds", a.healthAsked.Load())
	}
	a.healthy.Store(false)
	a.xAfter, a.bodyFor = 0, 8*quickStall.After
	if rec := a.ask(EnvdPort); rec.Code != http.StatusOK || rec.Body.Len() < 10 {
		t.Fatalf("streaming body with /health silent: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	a.xAfter, a.bodyFor = 8*quickStall.After, 0
	asked := a.healthAsked.Load()
	if rec := a.ask(8000); rec.Code != http.StatusOK || a.healthAsked.Load() != asked {
		t.Fatalf("a tenant's port: %d, %d probes", rec.Code, a.healthAsked.Load()-asked)
	}
	if n := a.proxy.Unresponsive(); n != 0 {
		t.Errorf("Unresponsive() = %d, want 0", n)
	}
}

// TestKnownStalledFailsSooner: once a request to an agent was given up, the
// next one probes at once and fails after one unanswered probe (not After
// plus Probes probes again); an answer from the agent makes it wait the
// whole bound again.
func TestKnownStalledFailsSooner(t *testing.T) {
	// Probes of 300 ms: the agent answering again must be seen to (a probe
	// of 100 ms went unanswered on a loaded machine, and the request 502).
	st := Stall{After: time.Second, Probe: 300 * time.Millisecond, Probes: 2}
	a := newFakeAgent(t, st)
	a.xAfter = time.Hour
	t0 := time.Now()
	if rec := a.ask(EnvdPort); rec.Code != http.StatusBadGateway || time.Since(t0) < st.After {
		t.Fatalf("first request: %d after %v", rec.Code, time.Since(t0))
	}
	t0 = time.Now()
	if rec := a.ask(EnvdPort); rec.Code != http.StatusBadGateway || time.Since(t0) >= st.After {
		t.Fatalf("request to a known stalled agent: %d after %v, want 502 before %v", rec.Code, time.Since(t0), st.After)
	}
	a.healthy.Store(true) // SIGCONT: answers again, slowly
	if rec := a.askPath(EnvdPort, "/x?wait="+(2*st.After).String()); rec.Code != http.StatusOK {
		t.Fatalf("agent answering again: %d %q", rec.Code, rec.Body.String())
	}
	if _, known := a.proxy.stalled.Load(a.id); known {
		t.Errorf("agent still remembered as stalled after answering")
	}
	a.healthy.Store(false)
	t0 = time.Now()
	if rec := a.ask(EnvdPort); rec.Code != http.StatusBadGateway || time.Since(t0) < st.After {
		t.Fatalf("after an answer the whole bound again: %d after %v", rec.Code, time.Since(t0))
	}
}
