package integration

import (
	"testing"
	"time"
)

// TestTeamsUserNSCopyDisk (runsc daemon, crun and runc available): a ready
// build's layers get a user-namespace copy (a full copy, for crun and runc
// sandboxes), and the copy counts against the team's disk quota. Before, it
// counted nowhere: a team limited to 24 MiB holding a 12 MiB template held
// 24 MiB of the host's disk and was still admitted an 8 MiB volume (201);
// now, once the copy is made, that is 429.
func TestTeamsUserNSCopyDisk(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	unmountVolumesAtEnd(t, d)
	tm := d.newTeam("userns-disk", map[string]any{"diskMB": 24})
	spec := map[string]any{"fromTemplate": "base",
		"steps": []map[string]any{{"type": "RUN", "args": []string{"head -c 12M /dev/urandom > /big", "root"}}}}
	tid, bid, code, _ := d.buildAs(t, tm.Key, "userns-disk", spec)
	if code != 202 {
		t.Fatalf("build start: %d", code)
	}
	if st := d.waitBuildAs(t, tm.Key, tid, bid); st.Status != "ready" {
		t.Fatalf("build under the quota: %+v", st)
	}
	// The copy is made after the build is ready: until then the volume fits.
	last := 0
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		var vol volumeRef
		if last = d.as(tm.Key, "POST", "/volumes", map[string]any{"name": "v", "sizeMB": 8}, &vol); last != 201 {
			break
		}
		d.as(tm.Key, "DELETE", "/volumes/"+vol.ID, nil, nil)
	}
	if last != 429 {
		t.Fatalf("8 MiB volume next to a 12 MiB template and its 12 MiB user-namespace copy, quota 24 MiB: %d, want 429", last)
	}
	// Deleting the template frees both.
	if c := d.as(tm.Key, "DELETE", "/templates/"+tid, nil, nil); c != 204 {
		t.Fatalf("delete template: %d", c)
	}
	var vol volumeRef
	if c := d.as(tm.Key, "POST", "/volumes", map[string]any{"name": "v", "sizeMB": 16}, &vol); c != 201 {
		t.Fatalf("volume once the template is deleted: %d", c)
	}
	d.as(tm.Key, "DELETE", "/volumes/"+vol.ID, nil, nil)
}
