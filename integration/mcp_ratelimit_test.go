package integration

import (
	"net/http"
	"strings"
	"testing"
)

// TestMCPRateLimited: /mcp is held to the per-team API rate limit
// (--team-api-rate, burst 5×): a team key's flood of /mcp requests gets
// 429 past its bucket, which its API calls share, and unknown keys' 401s
// are limited per address as the API's are. Before, /mcp only checked the
// key: 64 of 100 initializes answered 200 (one session each, up to the
// team's session cap), whatever the rate.
func TestMCPRateLimited(t *testing.T) {
	d := startDaemon(t, "crun", "", "--team-api-rate", "2")
	tm := d.newTeam("mcp-rate", nil)
	ping := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(key string) int {
		req, _ := http.NewRequest("POST", d.url+"/mcp", strings.NewReader(ping))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	counts := map[int]int{}
	for range 100 {
		counts[post(tm.Key)]++ // the bucket (10) runs out before the team's session cap
	}
	if counts[429] < 80 || counts[200] > 12 {
		t.Fatalf("a team's /mcp flood: %v, want at most 12 answered and the rest 429", counts)
	}
	if code := d.as(tm.Key, "GET", "/v2/sandboxes", nil, nil); code != 429 {
		t.Errorf("the flooding team's API call: %d, want 429 (one bucket)", code)
	}
	unauth := map[int]int{}
	for range 150 {
		unauth[post("e2b_"+strings.Repeat("0", 40))]++
	}
	if unauth[429] == 0 || unauth[401] > 130 {
		t.Errorf("an unknown key's /mcp flood: %v, want 401s then 429", unauth)
	}
}
