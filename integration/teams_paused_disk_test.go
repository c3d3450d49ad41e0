package integration

import (
	"strings"
	"testing"
	"time"
)

// TestTeamsPausedDisk: a team's paused sandboxes count against its disk
// quota. A paused sandbox is not live (the sandbox quota leaves it out), so
// before, a team bounded to one sandbox and 32 MiB of disk could pause a
// sandbox holding 100 MiB, create the next, fill and pause it, and so on:
// 311 MiB of the host's disk in three pauses (red team round 15, by hand),
// as much as its create rate allowed, and the node's --image-quota-mb (none
// by default) shared by every team. Now a pause is admitted as a snapshot
// is: one may take the team past its quota, the next is 429 with
// Retry-After and the sandbox keeps running; a timed-out autoPause sandbox
// of a team at its quota is not paused either: it runs on, its pause
// retried (TestAutoPauseDeferredAtTeamQuota); a snapshot then is refused
// too; deleting the paused sandbox frees its share.
func TestTeamsPausedDisk(t *testing.T) {
	requirements(t, "runsc")
	d := startDaemon(t, "runsc", "")
	tm := d.newTeam("paused-disk", map[string]any{"diskMB": 32, "sandboxes": 1})

	first := d.createAs(tm.Key, nil)
	if out, code := first.run("user", "head -c 40M /dev/urandom > ~/big && echo ok", time.Minute); code != 0 {
		t.Fatalf("fill: %d %s", code, out)
	}
	if c := d.as(tm.Key, "POST", "/sandboxes/"+first.ID+"/pause", map[string]any{}, nil); c != 204 {
		t.Fatalf("first pause under the quota: %d", c)
	}

	second := d.createAs(tm.Key, map[string]any{"autoPause": true, "timeout": 300})
	code, h, b := d.call("POST", "/sandboxes/"+second.ID+"/pause", map[string]string{"X-API-Key": tm.Key}, map[string]any{})
	if code != 429 || h.Get("Retry-After") == "" || !strings.Contains(string(b), "MiB of disk") {
		t.Fatalf("pause past the team's disk quota (its paused sandbox holds 40 MiB of 32): %d %q %s", code, h.Get("Retry-After"), b)
	}
	if out, code := second.run("user", "echo alive", 30*time.Second); code != 0 || !strings.Contains(out, "alive") {
		t.Fatalf("the refused sandbox keeps running: %d %q", code, out)
	}
	if c, _, b := d.call("POST", "/sandboxes/"+second.ID+"/snapshots", map[string]string{"X-API-Key": tm.Key}, map[string]any{}); c != 429 {
		t.Fatalf("snapshot past the team's disk quota: %d %s", c, b)
	}

	// The deadline of an autoPause sandbox: not paused past the quota.
	if c := d.as(tm.Key, "POST", "/sandboxes/"+second.ID+"/timeout", map[string]any{"timeout": 0}, nil); c != 204 {
		t.Fatalf("timeout 0: %d", c)
	}
	time.Sleep(2 * time.Second)
	if st := d.stateAs(tm.Key, second.ID); st != "running" {
		t.Fatalf("autoPause sandbox past its deadline at the team's disk quota: %q, want running (its pause deferred)", st)
	}
	d.deleteAs(tm.Key, second.ID)

	// Deleting the paused sandbox frees its share of the quota.
	d.deleteAs(tm.Key, first.ID)
	third := d.createAs(tm.Key, nil)
	if c := d.as(tm.Key, "POST", "/sandboxes/"+third.ID+"/pause", map[string]any{}, nil); c != 204 {
		t.Fatalf("pause once the paused sandbox is deleted: %d", c)
	}
}

// stateAs is id's state as key's GET shows it ("" if it answers no 200).
func (d *daemon) stateAs(key, id string) string {
	var in endInfo
	d.as(key, "GET", "/sandboxes/"+id, nil, &in)
	return in.State
}
