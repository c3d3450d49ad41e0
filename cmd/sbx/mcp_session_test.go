package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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
	keys := map[string]bool{"key-a": true, "key-b": true}
	srv := httptest.NewServer(mcpHTTPHandler("http://127.0.0.1:1", func(k string) bool { return keys[k] }))
	defer srv.Close()
	const initMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	const listMsg = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	code, sess, body := mcpPost(t, srv.URL, "key-a", "", initMsg)
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
