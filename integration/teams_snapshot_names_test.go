package integration

import (
	"strings"
	"testing"
	"time"
)

// TestTeamsSnapshotNames: snapshot names are per team, as template names
// are. Team B naming its own snapshot as team A's is neither refused (a
// 409 told B that some team held the name, and let B take names before A
// did) nor ever served to A: each team's create, list and delete by that
// name reach its own snapshot alone.
func TestTeamsSnapshotNames(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	a, b := d.newTeam("team-a", nil), d.newTeam("team-b", nil)
	snaps := map[string]string{}
	for _, tm := range []team{a, b} {
		sb := d.createAs(tm.Key, nil)
		sb.run("user", "echo "+tm.ID+" > /home/user/who", 30*time.Second)
		var snap struct {
			ID string `json:"snapshotID"`
		}
		if code := d.as(tm.Key, "POST", "/sandboxes/"+sb.ID+"/snapshots", map[string]any{"name": "shared-snap"}, &snap); code != 201 {
			t.Fatalf("team %s snapshots as shared-snap: %d", tm.ID, code)
		}
		snaps[tm.Key] = snap.ID
		key := tm.Key
		t.Cleanup(func() { d.as(key, "DELETE", "/templates/"+snap.ID, nil, nil) })
	}
	for _, tm := range []team{a, b} {
		sb := d.createAs(tm.Key, map[string]any{"templateID": "shared-snap"})
		if out, _ := sb.run("user", "cat /home/user/who", 30*time.Second); strings.TrimSpace(out) != tm.ID {
			t.Errorf("team %s's create from shared-snap runs %q's snapshot", tm.ID, strings.TrimSpace(out))
		}
		var list []map[string]any
		d.as(tm.Key, "GET", "/snapshots?name=shared-snap", nil, &list)
		if len(list) != 1 || list[0]["snapshotID"] != snaps[tm.Key] {
			t.Errorf("team %s lists shared-snap as %v", tm.ID, list)
		}
	}
	if code := d.as(b.Key, "DELETE", "/templates/shared-snap", nil, nil); code != 204 {
		t.Fatalf("team B deletes its shared-snap: %d", code)
	}
	var list []map[string]any
	if d.as(a.Key, "GET", "/snapshots", nil, &list); len(list) != 1 || list[0]["snapshotID"] != snaps[a.Key] {
		t.Errorf("team A's snapshots after B deleted its own shared-snap: %v", list)
	}
}

// TestTeamsSnapshotDiskConcurrent: snapshots taken at once cannot pass the
// team's disk quota together. Each was checked once, as it began, against
// the images the team held, so snapshots started together all passed
// before any was recorded (a team could fill the node's image quota, which
// every team's pauses and snapshots share, with as many as it had
// sandboxes). A snapshot may still pass the quota once, as a lone one may.
func TestTeamsSnapshotDiskConcurrent(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	tm := d.newTeam("snap-race", map[string]any{"diskMB": 64})
	const n = 3
	ids := make([]string, n)
	for i := range ids {
		ids[i] = d.createAs(tm.Key, nil).ID
	}
	codes := make(chan int, n)
	for _, id := range ids {
		go func() {
			var snap struct {
				ID string `json:"snapshotID"`
			}
			code := d.as(tm.Key, "POST", "/sandboxes/"+id+"/snapshots", map[string]any{}, &snap)
			if snap.ID != "" {
				t.Cleanup(func() { d.as(tm.Key, "DELETE", "/templates/"+snap.ID, nil, nil) })
			}
			codes <- code
		}()
	}
	got := map[int]int{}
	for range n {
		got[<-codes]++
	}
	if got[201] != 1 || got[429] != n-1 {
		t.Errorf("%d snapshots at once under a 64 MiB quota: %v, want one 201 and %d 429", n, got, n-1)
	}
}
