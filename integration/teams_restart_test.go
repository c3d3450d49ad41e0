package integration

import (
	"syscall"
	"testing"
)

// TestTeamsForkAndRestart: a fork's children are their parent's team's;
// teams, keys and every sandbox's team survive a daemon restart (the
// sandboxes are re-adopted as their team's, never the admin's).
func TestTeamsForkAndRestart(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	a, b := d.newTeam("restart-a", nil), d.newTeam("restart-b", nil)
	src := d.createAs(a.Key, nil)
	var kids []struct {
		Sandbox *struct {
			ID string `json:"sandboxID"`
		} `json:"sandbox"`
	}
	if code := d.as(a.Key, "POST", "/sandboxes/"+src.ID+"/fork", map[string]any{"count": 1, "timeout": 60}, &kids); code != 201 || len(kids) != 1 || kids[0].Sandbox == nil {
		t.Fatalf("fork: %d %+v", code, kids)
	}
	kid := kids[0].Sandbox.ID
	t.Cleanup(func() { d.deleteAs(a.Key, kid) })
	count := func(d *daemon, key string) int {
		var l []map[string]any
		if code := d.as(key, "GET", "/v2/sandboxes", nil, &l); code != 200 {
			t.Fatalf("list: %d", code)
		}
		return len(l)
	}
	check := func(d *daemon, when string) {
		if n := count(d, a.Key); n != 2 {
			t.Errorf("%s: team A lists %d sandboxes, want 2 (the source and its child)", when, n)
		}
		if n := count(d, b.Key); n != 0 {
			t.Errorf("%s: team B lists %d", when, n)
		}
		if n := count(d, apiKey); n != 0 {
			t.Errorf("%s: the admin (default team) lists %d", when, n)
		}
		if code, _, _ := d.call("GET", "/sandboxes/"+kid, map[string]string{"X-API-Key": b.Key}, nil); code != 404 {
			t.Errorf("%s: B reads A's child: %d", when, code)
		}
	}
	check(d, "before restart")
	d.stop(syscall.SIGTERM)
	d2 := startDaemon(t, "runsc", d.dataDir)
	check(d2, "after restart")
	for _, id := range []string{src.ID, kid} {
		d2.deleteAs(a.Key, id)
	}
}
