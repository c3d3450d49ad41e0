package integration

import (
	"sync"
	"testing"
	"time"
)

// TestTeamsFairAdmission: on a real daemon admitting one create at a time,
// a team that queued 24 creates first does not make another team's single
// create wait for all of them: it is served at the next turns, long before
// the flood is through (first come first served would put it last).
func TestTeamsFairAdmission(t *testing.T) {
	d := startDaemon(t, "crun", "", "--max-creating", "1", "--max-queued", "32")
	noisy, quiet := d.newTeam("noisy", nil), d.newTeam("quiet", nil)
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	create := func(tm team, name string) {
		defer wg.Done()
		code, _, body := d.call("POST", "/v2/sandboxes", map[string]string{"X-API-Key": tm.Key}, map[string]any{"templateID": "base", "timeout": 60})
		if code != 201 {
			t.Errorf("%s create: %d %s", name, code, body)
			return
		}
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
	}
	for range 24 {
		wg.Add(1)
		go create(noisy, "noisy")
	}
	time.Sleep(50 * time.Millisecond) // the flood is in flight or queued
	wg.Add(1)
	go create(quiet, "quiet")
	wg.Wait()
	t.Logf("completion order: %v", order)
	for i, n := range order {
		if n == "quiet" && i >= len(order)/2 {
			t.Errorf("the quiet team's create finished %d-th of %d: %v", i+1, len(order), order)
		}
	}
	for _, tm := range []team{noisy, quiet} {
		var l []map[string]any
		d.as(tm.Key, "GET", "/v2/sandboxes", nil, &l)
		for _, s := range l {
			d.deleteAs(tm.Key, s["sandboxID"].(string))
		}
	}
}
