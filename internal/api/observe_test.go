package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// memAudit records audit appends.
type memAudit struct {
	mu   sync.Mutex
	recs []map[string]string
}

func (a *memAudit) Append(kind, sandbox, actor string, fields map[string]string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := map[string]string{"kind": kind}
	for k, v := range fields {
		f[k] = v
	}
	a.recs = append(a.recs, f)
	return nil
}

func (a *memAudit) withRequest(id string) []map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []map[string]string
	for _, r := range a.recs {
		if r["request_id"] == id {
			out = append(out, r)
		}
	}
	return out
}

// fakeObs records API observations.
type fakeObs struct {
	mu     sync.Mutex
	routes []string
}

func (o *fakeObs) APIRequest(route string, code int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.routes = append(o.routes, route)
}

// TestRequestID: a well-formed client id is kept, anything else replaced;
// the id comes back in the header and is on every audit record the
// request caused (the API's and the sandbox's).
func TestRequestID(t *testing.T) {
	aud := &memAudit{}
	a, _ := newAPIAudited(t, nil, aud)
	srv := httptest.NewServer(a)
	defer srv.Close()
	for _, tc := range []struct {
		sent string
		keep bool
	}{{"client-id.1", true}, {"", false}, {"bad id with spaces", false}, {strings.Repeat("x", 200), false}} {
		req, _ := http.NewRequest("POST", srv.URL+"/sandboxes", strings.NewReader(`{"templateID":"base"}`))
		req.Header.Set("X-API-Key", testKey)
		if tc.sent != "" {
			req.Header.Set("X-Request-Id", tc.sent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("X-Request-Id")
		if resp.StatusCode != 201 || got == "" || (got == tc.sent) != tc.keep {
			t.Fatalf("sent %q: status %d, id %q", tc.sent, resp.StatusCode, got)
		}
		recs := aud.withRequest(got)
		kinds := map[string]bool{}
		for _, r := range recs {
			kinds[r["kind"]+"/"+r["event"]] = true
		}
		if !kinds["api/"] || !kinds["sandbox/created"] {
			t.Fatalf("audit records of request %q: %v", got, recs)
		}
	}
}

// TestMetricsEndpointNeedsKey: /metrics and the debug endpoints answer
// admin keys only, and the observer sees route patterns, not paths.
func TestMetricsEndpointNeedsKey(t *testing.T) {
	a, _ := newAPI(t, nil)
	obs := &fakeObs{}
	a.SetObservability(obs, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("sbx_up 1\n"))
	}), nil)
	srv := httptest.NewServer(a)
	defer srv.Close()
	for _, p := range []string{"/metrics", "/sbx/debug/config", "/sbx/debug/logs"} {
		if code, _ := do(t, srv, "GET", p, "", map[string]string{"X-API-Key": ""}); code != 401 {
			t.Errorf("%s without key: %d", p, code)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics with key: %d", resp.StatusCode)
	}
	if code, _ := do(t, srv, "GET", "/sbx/debug/config", "", nil); code != 404 {
		t.Errorf("debug config without a source: %d", code)
	}
	if code, _ := do(t, srv, "GET", "/debug/pprof/", "", nil); code != 404 {
		t.Errorf("pprof on the API listener: %d", code)
	}
	do(t, srv, "GET", "/sandboxes/abcdefghij0123456789", "", nil)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !contains(obs.routes, "GET /sandboxes/{id}") || !contains(obs.routes, "GET /metrics") {
		t.Fatalf("observed routes %q", obs.routes)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
