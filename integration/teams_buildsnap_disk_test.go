package integration

import (
	"testing"
)

// TestTeamsBuildSnapshotDisk: the memory snapshot a template's start
// command leaves (runsc: the ready sandbox's memory and files, kept with
// the build) is its team's disk. Before (red team round 15), it was
// recorded under no team and counted nowhere: each build of a template
// whose start command held memory left that much of the host's disk for as
// long as the template lived (a rebuild keeps the builds before it), so a
// team under any disk quota filled the host's disk one rebuild after
// another. Now a volume that would take the team past its quota is 429.
func TestTeamsBuildSnapshotDisk(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	unmountVolumesAtEnd(t, d)
	tm := d.newTeam("buildsnap-disk", map[string]any{"diskMB": 48})
	spec := map[string]any{"fromTemplate": "base",
		"startCmd": `python3 -c "import os,time; x=os.urandom(40<<20); open('/tmp/ready','w').close(); time.sleep(1e9)"`,
		"readyCmd": "test -f /tmp/ready"}
	tid, bid, code, _ := d.buildAs(t, tm.Key, "holds-memory", spec)
	if code != 202 {
		t.Fatalf("build start: %d", code)
	}
	if st := d.waitBuildAs(t, tm.Key, tid, bid); st.Status != "ready" {
		t.Fatalf("build: %+v", st)
	}
	var vol volumeRef
	if c := d.as(tm.Key, "POST", "/volumes", map[string]any{"name": "v", "sizeMB": 40}, &vol); c != 429 {
		d.call("DELETE", "/volumes/"+vol.ID, map[string]string{"X-API-Key": tm.Key}, nil)
		t.Fatalf("a 40 MiB volume next to a template whose snapshot holds 40 MiB of memory, under a 48 MiB quota: %d, want 429", c)
	}
	if c := d.as(tm.Key, "DELETE", "/templates/"+tid, nil, nil); c != 204 {
		t.Fatalf("delete the template: %d", c)
	}
	waitFor(t, "the deleted template's snapshot no longer counted", func() bool {
		c := d.as(tm.Key, "POST", "/volumes", map[string]any{"name": "v", "sizeMB": 40}, &vol)
		return c == 201
	})
	d.call("DELETE", "/volumes/"+vol.ID, map[string]string{"X-API-Key": tm.Key}, nil)
}
