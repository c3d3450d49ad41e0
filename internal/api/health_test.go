package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

func TestHealth(t *testing.T) {
	srv, _ := newServer(t)
	code, rep := do(t, srv, "GET", "/health", "", map[string]string{"X-API-Key": ""})
	if code != 200 || rep["status"] != "ok" || rep["runtimes"].(map[string]any)["fake"] != "ok" {
		t.Fatalf("health = %d %v", code, rep)
	}
}

// A runtime that failed to open at start is listed as unavailable (not
// installed is no degradation); creates asking for it get 503 with
// Retry-After, creates on the others still work.
func TestHealthUnavailableRuntime(t *testing.T) {
	srv, _ := newServerWith(t, func(c *sandbox.Config) {
		c.Unavailable = map[string]string{"crun": "crun binary not found"}
	})
	for _, c := range []struct{ key, want string }{
		{"", "error"}, {"e2b_not_a_key", "error"}, {testKey, "crun binary not found"},
	} { // the error's text (host paths, versions) for an admin key only
		code, rep := do(t, srv, "GET", "/health", "", map[string]string{"X-API-Key": c.key})
		if code != 200 || rep["status"] != "ok" || rep["runtimes"].(map[string]any)["crun"] != c.want ||
			fmt.Sprint(rep["unavailable"]) != "[crun]" {
			t.Fatalf("health with key %q = %d %v", c.key, code, rep)
		}
	}
	if code, e := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","runtime":"crun"}`, nil); code != 503 {
		t.Fatalf("create on the broken runtime = %d %v, want 503", code, e)
	}
	if code, _ := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base"}`, nil); code != 201 {
		t.Fatalf("create on the default runtime = %d", code)
	}
}

// A create that fails because the daemon's disk is full answers 507 with
// Retry-After, and leaves nothing behind.
func TestCreateDiskFull(t *testing.T) {
	srv, h := newServer(t)
	h.FailStart = fmt.Errorf("write bundle: %w", syscall.ENOSPC)
	req, _ := http.NewRequest("POST", srv.URL+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 507 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("create on a full disk = %d (Retry-After %q), want 507 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if r := h.Residue(); r != "" {
		t.Fatal(r)
	}
}
