package integration

import (
	"strings"
	"testing"
	"time"
)

// buildAs requests a build of name with key and starts it with spec; it
// returns the ids and the start's status code and Retry-After.
func (d *daemon) buildAs(t *testing.T, key, name string, spec map[string]any) (tid, bid string, code int, retry string) {
	t.Helper()
	var req struct{ TemplateID, BuildID string }
	if c := d.as(key, "POST", "/v3/templates", map[string]any{"name": name}, &req); c != 202 {
		t.Fatalf("request build %s: %d", name, c)
	}
	c, h, _ := d.call("POST", "/v2/templates/"+req.TemplateID+"/builds/"+req.BuildID, map[string]string{"X-API-Key": key}, spec)
	return req.TemplateID, req.BuildID, c, h.Get("Retry-After")
}

// waitBuildAs polls a build with key until it is ready or failed.
func (d *daemon) waitBuildAs(t *testing.T, key, tid, bid string) buildStatus {
	t.Helper()
	var st buildStatus
	for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		st = buildStatus{}
		if c := d.as(key, "GET", "/templates/"+tid+"/builds/"+bid+"/status", nil, &st); c != 200 {
			t.Fatalf("status: %d", c)
		}
		if st.Status == "ready" || st.Status == "error" {
			return st
		}
	}
	t.Fatalf("build %s: not done: %+v", bid, st)
	return st
}

// TestTeamsTemplateDisk: a team's templates count against its disk quota
// (with its volumes and snapshots). A build whose layers take the team past
// it fails with the quota as its reason and leaves no usable template; a
// team at its quota is refused a build start with 429 and Retry-After;
// another team's builds are unaffected, and its ready template counts
// against its volumes.
func TestTeamsTemplateDisk(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	unmountVolumesAtEnd(t, d)
	small := d.newTeam("disk-small", map[string]any{"diskMB": 10})
	big := d.newTeam("disk-big", map[string]any{"diskMB": 50})
	spec := map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{"head -c 12M /dev/urandom > /big", "root"}}}}

	tid, bid, code, _ := d.buildAs(t, small.Key, "disk-small-1", spec)
	if code != 202 {
		t.Fatalf("small team's build start under its quota: %d", code)
	}
	st := d.waitBuildAs(t, small.Key, tid, bid)
	if st.Status != "error" || st.Reason == nil || !strings.Contains(st.Reason.Message, "MiB of disk") || st.Reason.Step != "1" {
		t.Fatalf("build past the team's disk quota: %+v", st)
	}
	t.Logf("small team: %s (step %s)", st.Reason.Message, st.Reason.Step)
	if c := d.as(small.Key, "POST", "/v2/sandboxes", map[string]any{"templateID": "disk-small-1"}, nil); c != 404 {
		t.Errorf("create from the failed build's template: %d, want 404", c)
	}
	// At the quota (a volume holds all the failed build's log, under 1 MiB,
	// leaves of it): the build start is refused.
	var vol volumeRef
	if c := d.as(small.Key, "POST", "/volumes", map[string]any{"name": "full", "sizeMB": 9}, &vol); c != 201 {
		t.Fatalf("volume of the whole quota: %d", c)
	}
	if _, _, code, retry := d.buildAs(t, small.Key, "disk-small-2", spec); code != 429 || retry == "" {
		t.Errorf("build start at the disk quota: %d (Retry-After %q), want 429", code, retry)
	}
	d.call("DELETE", "/volumes/"+vol.ID, map[string]string{"X-API-Key": small.Key}, nil)

	// The other team builds the same, and its 12 MiB template counts.
	tid, bid, code, _ = d.buildAs(t, big.Key, "disk-big-1", spec)
	if code != 202 {
		t.Fatalf("big team's build start: %d", code)
	}
	if st := d.waitBuildAs(t, big.Key, tid, bid); st.Status != "ready" {
		t.Fatalf("big team's build: %+v", st)
	}
	if c, _, body := d.call("POST", "/volumes", map[string]string{"X-API-Key": big.Key}, map[string]any{"name": "v", "sizeMB": 40}); c != 429 {
		t.Errorf("volume past the quota its template shares: %d %s", c, body)
	}
	// 24 MiB: the template's 12 and its user-namespace copy's 12 (made
	// after the build, counted once made) leave 26 MiB of the 50.
	if c := d.as(big.Key, "POST", "/volumes", map[string]any{"name": "v", "sizeMB": 24}, &vol); c != 201 {
		t.Errorf("volume within the quota: %d", c)
	}
	d.call("DELETE", "/volumes/"+vol.ID, map[string]string{"X-API-Key": big.Key}, nil)
}
