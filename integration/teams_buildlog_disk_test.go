package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTeamsBuildLogDisk: a build's log is its team's disk. A failed build
// whose step printed 8 MB left a 5.7 MB log under <data-dir>/builds,
// counted nowhere and never removed, its template deleted or not (red team
// round 15: two such builds, 11 MB kept after both templates were
// deleted), so a team under any disk quota could fill the host's disk one
// build after another. Now the log counts against the team's disk quota
// (the next build start is 429, where it was 202) and goes with its
// template.
func TestTeamsBuildLogDisk(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	tm := d.newTeam("buildlog-disk", map[string]any{"diskMB": 4})
	spec := map[string]any{"fromTemplate": "base", "steps": []map[string]any{{"type": "RUN",
		"args": []string{`head -c 8000000 /dev/zero | tr '\0' x | fold -w 200; exit 1`, "root"}}}}
	tid, bid, code, _ := d.buildAs(t, tm.Key, "loud", spec)
	if code != 202 {
		t.Fatalf("build start under the quota: %d", code)
	}
	if st := d.waitBuildAs(t, tm.Key, tid, bid); st.Status != "error" {
		t.Fatalf("the loud build: %+v", st)
	}
	log := filepath.Join(d.dataDir, "builds", bid+".log")
	fi, err := os.Stat(log)
	if err != nil || fi.Size() < 4<<20 {
		t.Fatalf("the build's log: %v (want over 4 MiB)", err)
	}
	_, _, code, retry := d.buildAs(t, tm.Key, "loud-again", spec)
	if code != 429 || retry == "" {
		t.Fatalf("a build start with %d MiB of logs under a 4 MiB quota: %d (Retry-After %q)", fi.Size()>>20, code, retry)
	}
	if c := d.as(tm.Key, "DELETE", "/templates/"+tid, nil, nil); c != 204 {
		t.Fatalf("delete the template: %d", c)
	}
	waitFor(t, "the deleted template's build log removed", func() bool {
		_, err := os.Stat(log)
		return os.IsNotExist(err)
	})
}
