package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestMCPNeedsKey: /mcp makes a session (a server and its state, kept in
// the daemon's memory) only for a key the API accepts: without one, or with
// a wrong or revoked one, every request is 401 with the API's {code,
// message}, so strangers cannot fill the daemon with sessions.
func TestMCPNeedsKey(t *testing.T) {
	d := startDaemon(t, "crun", "")
	tm := d.newTeam("mcp-keys", nil)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(hdr map[string]string) (int, string, string) {
		req, _ := http.NewRequest("POST", d.url+"/mcp", strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), e.Message
	}
	for name, hdr := range map[string]map[string]string{
		"no key": nil, "wrong key": {"X-API-Key": "e2b_" + strings.Repeat("0", 40)},
		"wrong bearer": {"Authorization": "Bearer nope"},
	} {
		if code, sess, msg := post(hdr); code != 401 || sess != "" || msg == "" {
			t.Errorf("%s: %d, session %q, message %q; want 401 {code,message} and no session", name, code, sess, msg)
		}
	}
	for name, hdr := range map[string]map[string]string{"X-API-Key": {"X-API-Key": tm.Key}, "Bearer": {"Authorization": "Bearer " + tm.Key}} {
		if code, sess, _ := post(hdr); code != 200 || sess == "" {
			t.Errorf("%s: %d, session %q; want 200 and a session", name, code, sess)
		}
	}
	var keys []struct{ ID string }
	d.as(tm.Key, "GET", "/api-keys", nil, &keys)
	for _, k := range keys {
		d.as(tm.Key, "DELETE", "/api-keys/"+k.ID, nil, nil)
	}
	if code, _, _ := post(map[string]string{"X-API-Key": tm.Key}); code != 401 {
		t.Errorf("revoked key: %d, want 401", code)
	}
}
