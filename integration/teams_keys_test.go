package integration

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTeamsKeys: keys that are malformed, empty, in the wrong header, or
// revoked are 401 with one body; a revoked key is refused by the very next
// request, also when revoked while creates with it are in flight (each
// either finished as the team's or was refused, nothing half-made); the
// last-used time shows; admin-only routes refuse team keys; a team that
// owns a sandbox cannot be removed, and once removed its keys are refused.
func TestTeamsKeys(t *testing.T) {
	d := startDaemon(t, "crun", "")
	a := d.newTeam("keys-a", nil)
	ha := map[string]string{"X-API-Key": a.Key}
	const unauth = `{"code":401,"message":"invalid or missing X-API-Key"}` + "\n"
	for name, h := range map[string]map[string]string{
		"none":          nil,
		"empty":         {"X-API-Key": ""},
		"malformed":     {"X-API-Key": "e2b_not-a-key"},
		"almost":        {"X-API-Key": almost(a.Key)},
		"bearer header": {"Authorization": "Bearer " + a.Key},
		"padded":        {"X-API-Key": " " + a.Key + "x"},
	} {
		if code, _, body := d.call("GET", "/v2/sandboxes", h, nil); code != 401 || string(body) != unauth {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	if code, _, _ := d.call("GET", "/v2/sandboxes", ha, nil); code != 200 {
		t.Fatalf("team key: %d", code)
	}
	// E2B's /teams and /api-keys shapes; last-used is shown.
	var teams []map[string]any
	if d.as(a.Key, "GET", "/teams", nil, &teams); len(teams) != 1 || teams[0]["teamID"] != a.ID {
		t.Errorf("/teams: %v", teams)
	}
	var keys []struct {
		ID       string     `json:"id"`
		LastUsed *time.Time `json:"lastUsed"`
		Key      string     `json:"key"`
	}
	if d.as(a.Key, "GET", "/api-keys", nil, &keys); len(keys) != 1 || keys[0].LastUsed == nil || keys[0].Key != "" {
		t.Errorf("/api-keys: %+v", keys)
	}
	for _, p := range [][2]string{{"GET", "/sbx/teams"}, {"POST", "/sbx/teams"}, {"GET", "/sbx/storage"}, {"GET", "/sbx/routes"},
		{"GET", "/metrics"}, {"GET", "/sbx/debug/config"}, {"GET", "/sbx/debug/logs"}} {
		if code, _, body := d.call(p[0], p[1], ha, map[string]any{"name": "x"}); code != 403 {
			t.Errorf("%s %s with a team key: %d %s", p[0], p[1], code, body)
		}
	}

	// Revoke while creates with the key are in flight.
	var k2 struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	if code := d.as(a.Key, "POST", "/api-keys", map[string]any{"name": "doomed"}, &k2); code != 201 || k2.Key == "" {
		t.Fatalf("create key: %d", code)
	}
	if code, _, body := d.call("PATCH", "/api-keys/"+k2.ID, ha, map[string]any{"name": "renamed"}); code != 200 {
		t.Errorf("rename: %d %s", code, body)
	}
	var named []map[string]any
	if d.as(a.Key, "GET", "/api-keys", nil, &named); len(named) != 2 || named[1]["name"] != "renamed" {
		t.Errorf("after rename: %v", named)
	}
	var wg sync.WaitGroup
	codes := make([]int, 6)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 40 * time.Millisecond)
			codes[i], _, _ = d.call("POST", "/v2/sandboxes", map[string]string{"X-API-Key": k2.Key}, map[string]any{"templateID": "base", "timeout": 60})
		}()
	}
	time.Sleep(60 * time.Millisecond)
	if code, _, body := d.call("DELETE", "/api-keys/"+k2.ID, ha, nil); code != 204 {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if code, _, _ := d.call("GET", "/v2/sandboxes", map[string]string{"X-API-Key": k2.Key}, nil); code != 401 {
		t.Errorf("revoked key, next request: %d", code)
	}
	wg.Wait()
	made := 0
	for _, c := range codes {
		switch c {
		case 201:
			made++
		case 401:
		default:
			t.Errorf("create during revoke: %d (want 201 or 401)", c)
		}
	}
	var mine []map[string]any
	d.as(a.Key, "GET", "/v2/sandboxes", nil, &mine)
	if len(mine) != made {
		t.Errorf("team A lists %d sandboxes, %d creates answered 201 (codes %v)", len(mine), made, codes)
	}
	t.Logf("creates during revocation: %v", codes)
	if code, _, _ := d.call("DELETE", "/api-keys/"+k2.ID, ha, nil); code != 404 {
		t.Errorf("revoke twice: %d", code)
	}

	// A team that owns sandboxes is not removed; once empty it is, and its
	// key is refused at once.
	if len(mine) == 0 {
		d.createAs(a.Key, nil)
		d.as(a.Key, "GET", "/v2/sandboxes", nil, &mine)
	}
	if code, _, body := d.call("DELETE", "/sbx/teams/"+a.ID, map[string]string{"X-API-Key": apiKey}, nil); code != 409 {
		t.Errorf("remove a team with sandboxes: %d %s", code, body)
	}
	for _, sb := range mine {
		d.call("DELETE", "/sandboxes/"+sb["sandboxID"].(string), ha, nil)
	}
	if code, _, body := d.call("DELETE", "/sbx/teams/"+a.ID, map[string]string{"X-API-Key": apiKey}, nil); code != 204 {
		t.Fatalf("remove an empty team: %d %s", code, body)
	}
	if code, _, _ := d.call("GET", "/v2/sandboxes", ha, nil); code != 401 {
		t.Errorf("removed team's key: %d", code)
	}
}

// TestTeamsQuota: past a team's quota a create is 429 with Retry-After
// and nothing is started; many creates at once never pass the limit
// together; exactly at the limit is allowed; other teams and the admin are
// not affected; the create rate is bounded per team.
func TestTeamsQuota(t *testing.T) {
	d := startDaemon(t, "crun", "", "--team-max-sandboxes", "2")
	unmountVolumesAtEnd(t, d)
	a := d.newTeam("quota-a", nil)
	b := d.newTeam("quota-b", map[string]any{"sandboxes": 1, "createsPerSec": 0.2})
	var wg sync.WaitGroup
	codes := make([]int, 5)
	retry := make([]string, 5)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h http.Header
			codes[i], h, _ = d.call("POST", "/v2/sandboxes", map[string]string{"X-API-Key": a.Key}, map[string]any{"templateID": "base", "timeout": 60})
			retry[i] = h.Get("Retry-After")
		}()
	}
	wg.Wait()
	ok := 0
	for i, c := range codes {
		switch {
		case c == 201:
			ok++
		case c == 429 && retry[i] != "":
		default:
			t.Errorf("create %d: %d (Retry-After %q)", i, c, retry[i])
		}
	}
	var mine []map[string]any
	d.as(a.Key, "GET", "/v2/sandboxes", nil, &mine)
	if ok != 2 || len(mine) != 2 {
		t.Errorf("5 creates at once under a quota of 2: %d made, %d listed (%v)", ok, len(mine), codes)
	}
	// Team B: its own quota of 1, and 0.2 creates a second.
	sb := d.createAs(b.Key, nil)
	if code, _, body := d.call("POST", "/v2/sandboxes", map[string]string{"X-API-Key": b.Key}, map[string]any{"templateID": "base"}); code != 429 {
		t.Errorf("team B over its quota: %d %s", code, body)
	}
	d.call("DELETE", "/sandboxes/"+sb.ID, map[string]string{"X-API-Key": b.Key}, nil)
	if code, _, body := d.call("POST", "/v2/sandboxes", map[string]string{"X-API-Key": b.Key}, map[string]any{"templateID": "base"}); code != 429 {
		t.Errorf("team B over its create rate: %d %s", code, body)
	}
	// Builds and disk: a team with room for one build and 20 MiB.
	c := d.newTeam("quota-c", map[string]any{"builds": 1, "diskMB": 20})
	if code, _, body := d.call("POST", "/v3/templates", map[string]string{"X-API-Key": c.Key}, map[string]any{"name": "quota-c-1"}); code != 202 {
		t.Errorf("first build: %d %s", code, body)
	}
	if code, _, body := d.call("POST", "/v3/templates", map[string]string{"X-API-Key": c.Key}, map[string]any{"name": "quota-c-2"}); code != 429 {
		t.Errorf("second build at once: %d %s", code, body)
	}
	var vol volumeRef
	if code := d.as(c.Key, "POST", "/volumes", map[string]any{"name": "v1", "sizeMB": 16}, &vol); code != 201 {
		t.Errorf("volume within the disk quota: %d", code)
	}
	if code, _, body := d.call("POST", "/volumes", map[string]string{"X-API-Key": c.Key}, map[string]any{"name": "v2", "sizeMB": 16}); code != 429 {
		t.Errorf("volume past the disk quota: %d %s", code, body)
	}
	d.call("DELETE", "/volumes/"+vol.ID, map[string]string{"X-API-Key": c.Key}, nil)
	// The admin (default team) has no quota.
	d.create(nil)
	d.create(nil)
	d.create(nil)
	// A frees one: exactly at the limit again is allowed.
	d.call("DELETE", "/sandboxes/"+mine[0]["sandboxID"].(string), map[string]string{"X-API-Key": a.Key}, nil)
	d.createAs(a.Key, nil)
	for _, s := range mine[1:] {
		d.call("DELETE", "/sandboxes/"+s["sandboxID"].(string), map[string]string{"X-API-Key": a.Key}, nil)
	}
}

// almost is key with its last character changed (to "0", or "1" where it
// was "0": a key ending in "0" must not test as a wrong key).
func almost(key string) string {
	last := "0"
	if strings.HasSuffix(key, "0") {
		last = "1"
	}
	return key[:len(key)-1] + last
}
