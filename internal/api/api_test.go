package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
)

const testKey = "e2b_0123456789abcdef0123456789abcdef01234567"

func newServer(t *testing.T) (*httptest.Server, *sandboxtest.Host) {
	t.Helper()
	return newServerWith(t, nil)
}

// newServerWith is newServer with the manager's config adjusted by edit.
func newServerWith(t *testing.T, edit func(*sandbox.Config)) (*httptest.Server, *sandboxtest.Host) {
	t.Helper()
	a, h := newAPI(t, edit)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv, h
}

// newAPI is the API handler over a fake host, not yet served.
func newAPI(t *testing.T, edit func(*sandbox.Config)) (*api.Server, *sandboxtest.Host) {
	t.Helper()
	return newAPIAudited(t, edit, nil)
}

// openStore is a real store in a temporary directory, closed at the end.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newAPIAudited is newAPI with aud (may be nil) receiving the API's and
// the manager's audit records.
func newAPIAudited(t *testing.T, edit func(*sandbox.Config), aud *memAudit) (*api.Server, *sandboxtest.Host) {
	t.Helper()
	return newAPILogged(t, edit, aud, io.Discard)
}

// newAPILogged is newAPIAudited with the daemon's log written to logw.
func newAPILogged(t *testing.T, edit func(*sandbox.Config), aud *memAudit, logw io.Writer) (*api.Server, *sandboxtest.Host) {
	t.Helper()
	h := sandboxtest.NewHost()
	st := openStore(t)
	cfg := sandbox.Config{DefaultRuntime: "fake", AgentPort: sandboxtest.StartAgent(t),
		DefaultTimeout: time.Minute, MaxTimeout: time.Hour,
		Defaults: sandbox.Resources{CPUCount: 1, MemoryMB: 256, DiskSizeMB: 256, Pids: 100},
		Max:      sandbox.Resources{CPUCount: 4, MemoryMB: 2048, DiskSizeMB: 2048}}
	if edit != nil {
		edit(&cfg)
	}
	var apiAud api.Auditor
	if aud != nil {
		cfg.Audit, apiAud = aud, aud
	}
	log := slog.New(slog.NewTextHandler(logw, nil))
	m, err := sandbox.New(cfg, st, sandbox.Runtimes{"fake": sandboxtest.NewRuntime(h)}, h,
		sandboxtest.NewLayers(h), sandboxtest.Templates{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	keys, _, err := api.LoadKeys(t.TempDir(), testKey)
	if err != nil {
		t.Fatal(err)
	}
	return api.New(m, keys, apiAud, log), h
}

func do(t *testing.T, srv *httptest.Server, method, path, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("X-API-Key", testKey)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

func TestCreateGetKill(t *testing.T) {
	srv, h := newServer(t)
	code, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","metadata":{"a":"b"},"timeout":60}`, nil)
	if code != 201 || sb["envdVersion"] != api.EnvdVersion || sb["envdAccessToken"] == "" {
		t.Fatalf("create = %d %v", code, sb)
	}
	id := sb["sandboxID"].(string)
	if code, d := do(t, srv, "GET", "/sandboxes/"+id, "", nil); code != 200 || d["state"] != "running" {
		t.Fatalf("get = %d %v", code, d)
	}
	if code, _ := do(t, srv, "POST", "/sandboxes/"+id+"/timeout", `{"timeout":30}`, nil); code != 204 {
		t.Fatalf("timeout = %d", code)
	}
	if code, _ := do(t, srv, "DELETE", "/sandboxes/"+id, "", nil); code != 204 {
		t.Fatalf("kill = %d", code)
	}
	if code, e := do(t, srv, "DELETE", "/sandboxes/"+id, "", nil); code != 404 || e["code"] != float64(404) {
		t.Fatalf("second kill = %d %v (the SDK reads code 404 from the body)", code, e)
	}
	if r := h.Residue(); r != "" {
		t.Fatal(r)
	}
}

func TestAbuse(t *testing.T) {
	srv, h := newServer(t)
	big := `{"templateID":"base","metadata":{"k":"` + strings.Repeat("x", 2<<20) + `"}}`
	tests := []struct {
		name, method, path, body string
		hdr                      map[string]string
		want                     int
	}{
		{"no key", "POST", "/v2/sandboxes", `{}`, map[string]string{"X-API-Key": ""}, 401},
		{"wrong key", "GET", "/v2/sandboxes", ``, map[string]string{"X-API-Key": "e2b_wrong"}, 401},
		{"malformed json", "POST", "/v2/sandboxes", `{"templateID":`, nil, 400},
		{"trailing data", "POST", "/v2/sandboxes", `{"templateID":"base"} {}`, nil, 400},
		{"wrong type", "POST", "/v2/sandboxes", `{"templateID":7}`, nil, 400},
		{"array body", "POST", "/v2/sandboxes", `[]`, nil, 400},
		{"huge body", "POST", "/v2/sandboxes", big, nil, 413},
		{"zero timeout", "POST", "/v2/sandboxes", `{"templateID":"base","timeout":0}`, nil, 400},
		{"mcp", "POST", "/v2/sandboxes", `{"templateID":"base","mcp":{"github":{}}}`, nil, 400},
		{"negative timeout", "POST", "/v2/sandboxes", `{"templateID":"base","timeout":-1}`, nil, 400},
		{"huge timeout", "POST", "/v2/sandboxes", `{"templateID":"base","timeout":9223372036854775807}`, nil, 400},
		{"overflowing timeout", "POST", "/v2/sandboxes", `{"templateID":"base","timeout":1e40}`, nil, 400},
		{"float timeout", "POST", "/v2/sandboxes", `{"templateID":"base","timeout":1.5}`, nil, 400},
		{"unknown template", "POST", "/v2/sandboxes", `{"templateID":"nope"}`, nil, 404},
		{"unknown runtime", "POST", "/v2/sandboxes", `{"templateID":"base","runtime":"docker"}`, nil, 400},
		{"too much memory", "POST", "/v2/sandboxes", `{"templateID":"base","memoryMB":999999}`, nil, 400},
		{"env name with =", "POST", "/v2/sandboxes", `{"templateID":"base","envVars":{"A=B":"c"}}`, nil, 400},
		{"long env name with =", "POST", "/v2/sandboxes", `{"templateID":"base","envVars":{"A=` + strings.Repeat("b", 100<<10) + `":"c"}}`, nil, 400},
		{"long invalid template", "POST", "/v2/sandboxes", `{"templateID":"` + strings.Repeat("/", 100<<10) + `"}`, nil, 404},
		{"bad id", "GET", "/sandboxes/..%2F..%2Fetc", ``, nil, 404},
		{"unknown id", "GET", "/sandboxes/aaaaaaaaaaaaaaaaaaaa", ``, nil, 404},
		{"unknown id kill", "DELETE", "/sandboxes/aaaaaaaaaaaaaaaaaaaa", ``, nil, 404},
		// A body that is JSON is checked after the lookup, as E2B (TestBodyBeforeLookup).
		{"timeout on unknown id", "POST", "/sandboxes/aaaaaaaaaaaaaaaaaaaa/timeout", `{}`, nil, 404},
		{"bad list limit", "GET", "/v2/sandboxes?limit=0", ``, nil, 400},
		{"bad metadata filter", "GET", "/v2/sandboxes?metadata=%25zz", ``, nil, 400},
		{"unknown endpoint", "GET", "/v9/nothing", ``, nil, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, e := do(t, srv, tt.method, tt.path, tt.body, tt.hdr)
			if code != tt.want {
				t.Fatalf("status = %d (%v), want %d", code, e, tt.want)
			}
			if e["code"] != float64(code) || e["message"] == "" {
				t.Fatalf("error body = %v, want {code:%d, message}", e, code)
			}
			if m, _ := e["message"].(string); len(m) > 1024 { // no request echoed back whole
				t.Fatalf("a %d-byte message: %.200s…", len(m), m)
			}
		})
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue after rejected requests: %s", r)
	}
}

func TestListFiltersAndPages(t *testing.T) {
	srv, _ := newServer(t)
	for i := 0; i < 3; i++ {
		if code, _ := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","metadata":{"n":"`+string(rune('a'+i))+`","who":"b c"}}`, nil); code != 201 {
			t.Fatal(code)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v2/sandboxes?metadata=n%3Db%26who%3Db%252520c", nil)
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&items)
	resp.Body.Close()
	if len(items) != 1 || items[0]["metadata"].(map[string]any)["n"] != "b" {
		t.Fatalf("filtered list = %v", items)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/v2/sandboxes?limit=2", nil)
	req.Header.Set("X-API-Key", testKey)
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.Header.Get("X-Next-Token") == "" {
		t.Fatal("no X-Next-Token on a partial page")
	}
}
