package integration

import (
	"testing"
	"time"
)

// TestTeamsWarmPool: a create served from a warm pool is its team's like
// a cold one (the pooled sandbox had no tenant until it was claimed).
func TestTeamsWarmPool(t *testing.T) {
	d := startDaemon(t, "crun", "", "--pool", "base:crun=1")
	a := d.newTeam("pool-a", nil)
	d.waitPool(t, 1)
	sb := d.createAs(a.Key, map[string]any{"templateID": "base"})
	var mine, admin []map[string]any
	d.as(a.Key, "GET", "/v2/sandboxes", nil, &mine)
	d.as(apiKey, "GET", "/v2/sandboxes", nil, &admin)
	if len(mine) != 1 || mine[0]["sandboxID"] != sb.ID || len(admin) != 0 {
		t.Fatalf("team A lists %v; the admin lists %v", mine, admin)
	}
	if code, _, _ := d.call("GET", "/sandboxes/"+sb.ID, map[string]string{"X-API-Key": apiKey}, nil); code != 404 {
		t.Errorf("the admin reads team A's pooled sandbox: %d", code)
	}
	if out, code := sb.run("user", "echo pooled", 10*time.Second); code != 0 || out != "pooled\n" {
		t.Errorf("run: %q %d", out, code)
	}
}
