package interpreter

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// newTestServer serves an interpreter whose interpreters do not exist, as
// in a sandbox without python3: everything but running code works.
func newTestServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	line := "user:x:" + itoa(os.Getuid()) + ":" + itoa(os.Getgid()) + "::" + dir + ":/bin/sh\n"
	if err := os.WriteFile(passwd, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "group"), nil, 0o644) //nolint:errcheck
	tok := "secret"
	st := identity.NewState()
	st.Apply(identity.Init{AccessToken: &tok})
	s, err := New(Config{Python: "/nonexistent/python3", User: "user", Node: "/nonexistent/node", Java: "/nonexistent/java", State: st,
		Users: identity.Files{Passwd: passwd, Group: filepath.Join(dir, "group")}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	return s, hs
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestRequests(t *testing.T) {
	s, hs := newTestServer(t)
	known, err := s.newContext("python", "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, path, token, body string
		status                          int
		contains                        string
	}{
		{"health", "GET", "/health", "", "", 200, `"OK"`},
		{"execute without token", "POST", "/execute", "", `{"code":"1"}`, 401, "X-Access-Token"},
		{"execute wrong token", "POST", "/execute", "nope", `{"code":"1"}`, 401, ""},
		{"context and language", "POST", "/execute", "secret", `{"code":"1","context_id":"x","language":"python"}`, 400, "mutually exclusive"},
		{"unknown context", "POST", "/execute", "secret", `{"code":"1","context_id":"nope"}`, 404, "context not found"},
		{"unsupported language", "POST", "/execute", "secret", `{"code":"1","language":"cobol"}`, 400, "unsupported language"},
		{"malformed body", "POST", "/execute", "secret", `{"code":`, 400, ""},
		{"bad bash env", "POST", "/execute", "secret", `{"code":"1","language":"bash","env_vars":{"a.b":"1"}}`, 400, "bash variable"},
		{"no interpreter", "POST", "/execute", "secret", `{"code":"1"}`, 200, `"name":"KernelStartError"`},
		{"create bad language", "POST", "/contexts", "", `{"language":"cobol"}`, 400, "cobol"},
		{"create bad cwd", "POST", "/contexts", "", `{"cwd":"/nonexistent"}`, 400, "not an existing directory"},
		{"create relative cwd", "POST", "/contexts", "", `{"cwd":"tmp"}`, 400, "absolute"},
		{"create without interpreter", "POST", "/contexts", "", `{}`, 503, "not installed"},
		{"list", "GET", "/contexts", "", "", 200, known.ID},
		{"restart unknown", "POST", "/contexts/nope/restart", "", "", 404, "context not found"},
		{"delete unknown", "DELETE", "/contexts/nope", "", "", 404, "context not found"},
		{"delete", "DELETE", "/contexts/" + known.ID, "", "", 200, "null"},
		{"unknown route", "GET", "/nope", "", "", 404, "no route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, hs.URL+tt.path, strings.NewReader(tt.body))
			if tt.token != "" {
				req.Header.Set("X-Access-Token", tt.token)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status || !strings.Contains(string(b), tt.contains) {
				t.Errorf("%s %s = %d %q, want %d containing %q", tt.method, tt.path, res.StatusCode, b, tt.status, tt.contains)
			}
		})
	}
	if _, err := s.lookup(known.ID); err == nil {
		t.Error("deleted context still there")
	}
}

// TestStreamEnds: a failed execution is still well-formed NDJSON that
// ends with end_of_execution.
func TestStreamEnds(t *testing.T) {
	_, hs := newTestServer(t)
	req, _ := http.NewRequest("POST", hs.URL+"/execute", strings.NewReader(`{"code":"1","language":"js"}`))
	req.Header.Set("X-Access-Token", "secret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
	var types []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		types = append(types, l["type"].(string))
	}
	if strings.Join(types, ",") != "error,end_of_execution" {
		t.Errorf("lines %v", types)
	}
}

// TestPrewarmBegin: the prewarm runs inside a Begin span (the agent's OOM
// guard stays awake while it may start a kernel), begun before New
// returns and ended once the prewarm is over (here it fails: no python).
func TestPrewarmBegin(t *testing.T) {
	var begun atomic.Int32
	ended := make(chan struct{})
	s, err := New(Config{Python: "/nonexistent/python3", User: "user", Prewarm: true, Users: identity.Files{Passwd: "/nonexistent"},
		Begin: func() func() { begun.Add(1); return func() { close(ended) } }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if begun.Load() != 1 {
		t.Fatalf("Begin called %d times before New returned, want 1", begun.Load())
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the prewarm's span never ended")
	}
}
