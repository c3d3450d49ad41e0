package integration

import (
	"strings"
	"testing"
	"time"
)

// endInfo is what a GET of a sandbox tells of its state and deadline.
type endInfo struct {
	State string    `json:"state"`
	EndAt time.Time `json:"endAt"`
}

// TestAutoPauseDeferredAtTeamQuota (runsc, crun): an autoPause sandbox of
// a team at its disk quota reaching its deadline was killed, its files
// lost, because the pause was refused. Now it runs on (a GET shows it
// running, its endAt moved to the next try), its files readable; killing
// the team's other paused sandbox frees the disk and the pause is retried
// at once (the next try is a minute away), and it resumes with its file.
func TestAutoPauseDeferredAtTeamQuota(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			requirements(t, rt)
			d := startDaemon(t, rt, "", "--pause-retry", "1m")
			tm := d.newTeam("deferred", map[string]any{"diskMB": 32, "sandboxes": 1})
			pause := map[string]any{"memory": rt == "runsc"}
			first := d.createAs(tm.Key, nil)
			if out, code := first.run("user", "head -c 40M /dev/urandom > ~/big && echo ok", time.Minute); code != 0 {
				t.Fatalf("fill: %d %s", code, out)
			}
			if c := d.as(tm.Key, "POST", "/sandboxes/"+first.ID+"/pause", pause, nil); c != 204 {
				t.Fatalf("first pause under the quota: %d", c)
			}
			second := d.createAs(tm.Key, map[string]any{"autoPause": true, "timeout": 300})
			if out, code := second.run("user", "echo kept > ~/f && echo ok", 30*time.Second); code != 0 {
				t.Fatalf("write: %d %s", code, out)
			}
			code, h, b := d.call("POST", "/sandboxes/"+second.ID+"/pause", map[string]string{"X-API-Key": tm.Key}, pause)
			if code != 429 || h.Get("Retry-After") == "" {
				t.Fatalf("API pause at the team's disk quota: %d %q %s", code, h.Get("Retry-After"), b)
			}
			if c := d.as(tm.Key, "POST", "/sandboxes/"+second.ID+"/timeout", map[string]any{"timeout": 0}, nil); c != 204 {
				t.Fatalf("timeout 0: %d", c)
			}
			deferred(t, d, tm.Key, second)
			d.deleteAs(tm.Key, first.ID) // frees the team's disk
			waitStateAs(t, d, tm.Key, second.ID, "paused", 30*time.Second)
			if c := d.as(tm.Key, "POST", "/v2/sandboxes/"+second.ID+"/connect", map[string]any{"timeout": 60}, nil); c != 201 {
				t.Fatalf("resume: %d\n%s", c, tail(d.log.String(), 2000))
			}
			if out, _ := second.run("user", "cat ~/f", 20*time.Second); out != "kept\n" {
				t.Fatalf("after the resume: %q", out)
			}
		})
	}
}

// TestAutoPauseDeferredAtImageQuota (runsc): the same at the node's
// --image-quota-mb: the API pause is 507 with Retry-After and the sandbox
// runs on; the deadline's pause is deferred, not a kill.
func TestAutoPauseDeferredAtImageQuota(t *testing.T) {
	d := startDaemon(t, "runsc", "", "--image-quota-mb", "1", "--pause-retry", "1m")
	sb := d.create(map[string]any{"autoPause": true, "timeout": 300})
	sb.run("user", "echo kept > ~/f", 20*time.Second)
	code, h, b := d.call("POST", "/sandboxes/"+sb.ID+"/pause", map[string]string{"X-API-Key": apiKey}, nil)
	if code != 507 || h.Get("Retry-After") == "" {
		t.Fatalf("API pause past the image quota: %d %q %s", code, h.Get("Retry-After"), b)
	}
	if c := d.api("POST", "/sandboxes/"+sb.ID+"/timeout", map[string]any{"timeout": 0}, nil); c != 204 {
		t.Fatalf("timeout 0: %d", c)
	}
	deferred(t, d, apiKey, sb)
}

// deferred checks that sb, past its deadline with its pause refused, runs
// on with its file and a GET showing it running, its endAt the next try.
func deferred(t *testing.T, d *daemon, key string, sb *sandbox) {
	t.Helper()
	time.Sleep(3 * time.Second) // the deadline's pause was tried and refused
	var in endInfo
	if c := d.as(key, "GET", "/sandboxes/"+sb.ID, nil, &in); c != 200 || in.State != "running" {
		t.Fatalf("past its deadline with its pause refused: %d %+v\n%s", c, in, tail(d.log.String(), 2000))
	}
	if until := time.Until(in.EndAt); until < 30*time.Second || until > time.Minute {
		t.Fatalf("endAt in %v, want the next try (a minute after the refusal)", until)
	}
	if out, _ := sb.run("user", "cat ~/f", 20*time.Second); out != "kept\n" {
		t.Fatalf("the file after the deadline: %q", out)
	}
	if !strings.Contains(d.log.String(), "pause refused for want of disk") {
		t.Fatalf("the daemon's log does not say why:\n%s", tail(d.log.String(), 2000))
	}
}

// waitStateAs waits until key's GET of id shows state.
func waitStateAs(t *testing.T, d *daemon, key, id, state string, within time.Duration) {
	t.Helper()
	var in endInfo
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if d.as(key, "GET", "/sandboxes/"+id, nil, &in); in.State == state {
			return
		}
	}
	t.Fatalf("sandbox %s: %q after %v, want %s\n%s", id, in.State, within, state, tail(d.log.String(), 2000))
}
