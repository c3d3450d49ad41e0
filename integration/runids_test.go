package integration

import (
	"strings"
	"testing"
	"time"
)

// TestForkPlantedRunIDs: what the source's root leaves in /run/e2b (a FIFO
// in place of .E2B_SANDBOX_ID, a hard link to /etc/shadow in place of
// .E2B_TEAM_ID) neither hangs a fork child's /init (before: the fork failed
// with 503 after 10 s, the agent's open of the FIFO blocked for good) nor
// is written through: the child reads its own id there and /etc/shadow is
// as it was.
func TestForkPlantedRunIDs(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	src := d.create(nil)
	plant := `cd /run/e2b && rm -f .E2B_SANDBOX_ID .E2B_TEAM_ID && mkfifo .E2B_SANDBOX_ID && ln /etc/shadow .E2B_TEAM_ID && head -c 5 /etc/shadow`
	if out, code := src.run("root", plant, 20*time.Second); code != 0 || out != "root:" {
		t.Fatalf("plant: %d %q", code, out)
	}
	var kids []struct {
		Sandbox *sandbox                  `json:"sandbox"`
		Error   *struct{ Message string } `json:"error"`
	}
	start := time.Now()
	if code := d.api("POST", "/sandboxes/"+src.ID+"/fork", map[string]any{"count": 1, "timeout": 60}, &kids); code != 201 || len(kids) != 1 || kids[0].Sandbox == nil {
		t.Fatalf("fork: %d %+v after %v\n%s", code, kids, time.Since(start), tail(d.log.String(), 2000))
	}
	c := kids[0].Sandbox
	c.d = d
	t.Cleanup(func() { d.deleteQuiet(c.ID) })
	out, code := c.run("root", "cat /run/e2b/.E2B_SANDBOX_ID; echo; head -c 5 /etc/shadow; echo; stat -c %F /run/e2b/.E2B_SANDBOX_ID", 20*time.Second)
	if want := c.ID + "\nroot:\nregular file"; code != 0 || strings.TrimSpace(out) != want {
		t.Fatalf("child: %d %q, want %q", code, out, want)
	}
}
