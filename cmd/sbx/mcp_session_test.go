package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/api"
)

// teamsOf admits the keys of byKey as their teams (others get 401).
func teamsOf(byKey map[string]string) func(http.ResponseWriter, *http.Request, string) (string, bool) {
	return func(w http.ResponseWriter, _ *http.Request, k string) (string, bool) {
		t, ok := byKey[k]
		if !ok {
			api.WriteError(w, http.StatusUnauthorized, "invalid or missing X-API-Key")
		}
		return t, ok
	}
}

const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// mcpPost sends one JSON-RPC message to /mcp with key (and session, if
// set) and returns the answer's status, session id and body.
func mcpPost(t *testing.T, url, key, session, msg string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", key)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(body)
}

// TestMCPSessionBoundToKey: an /mcp session acts with the key that made it,
// so it answers only that key: another key the API accepts (another team's,
// or another of the same team) gets 403 with the session's id, and the
// session still serves its own key. Before, any valid key with a session's
// id acted as the session's key.
func TestMCPSessionBoundToKey(t *testing.T) {
	srv := httptest.NewServer(mcpHTTPHandler("http://127.0.0.1:1", nil, teamsOf(map[string]string{"key-a": "a", "key-b": "a"})))
	defer srv.Close()
	const listMsg = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	code, sess, body := mcpPost(t, srv.URL, "key-a", "", mcpInit)
	if code != http.StatusOK || sess == "" {
		t.Fatalf("initialize: %d %q %s", code, sess, body)
	}
	if code, _, body := mcpPost(t, srv.URL, "key-b", sess, listMsg); code != http.StatusForbidden || strings.Contains(body, "run_command") {
		t.Fatalf("another key on the session: %d %s, want 403", code, body)
	}
	if code, _, body := mcpPost(t, srv.URL, "nokey", sess, listMsg); code != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %d %s, want 401", code, body)
	}
	if code, _, body := mcpPost(t, srv.URL, "key-a", sess, listMsg); code != http.StatusOK || !strings.Contains(body, "run_command") {
		t.Fatalf("the session's own key: %d %s", code, body)
	}
}

// TestMCPSessionsBounded: a team holds at most mcpMaxSessions open /mcp
// sessions (each a server in the daemon's memory): the next initialize is
// 429 with {code, message}, whichever of the team's keys sends it; another
// team is not affected; a session ended with DELETE frees its place.
// Before, one key made 3000 sessions in 9.5 s (+546 MiB of the daemon).
func TestMCPSessionsBounded(t *testing.T) {
	defer func(n int) { mcpMaxSessions = n }(mcpMaxSessions)
	mcpMaxSessions = 3
	srv := httptest.NewServer(mcpHTTPHandler("http://127.0.0.1:1", nil, teamsOf(map[string]string{"a1": "a", "a2": "a", "b1": "b"})))
	defer srv.Close()
	var first string
	for i, key := range []string{"a1", "a2", "a1"} {
		code, sess, body := mcpPost(t, srv.URL, key, "", mcpInit)
		if code != http.StatusOK || sess == "" {
			t.Fatalf("session %d: %d %s", i, code, body)
		}
		if i == 0 {
			first = sess
		}
	}
	for _, key := range []string{"a1", "a2"} {
		code, _, body := mcpPost(t, srv.URL, key, "", mcpInit)
		if code != http.StatusTooManyRequests || !strings.Contains(body, `"code":429`) {
			t.Fatalf("a session past the bound (%s): %d %s, want 429 {code, message}", key, code, body)
		}
	}
	if code, _, body := mcpPost(t, srv.URL, "b1", "", mcpInit); code != http.StatusOK {
		t.Fatalf("another team: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	req.Header.Set("X-API-Key", "a1")
	req.Header.Set("Mcp-Session-Id", first)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, _, body := mcpPost(t, srv.URL, "a2", "", mcpInit); code != http.StatusOK {
		t.Fatalf("after a DELETE (%d): %d %s, want a session", resp.StatusCode, code, body)
	}
}
