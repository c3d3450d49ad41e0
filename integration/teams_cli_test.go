package integration

import (
	"strings"
	"testing"
)

// TestTeamsCLI: sbx teams create/ls/rm (admin key) and sbx keys
// create/ls/rm (a team's key) against a real daemon.
func TestTeamsCLI(t *testing.T) {
	d := startDaemon(t, "crun", "")
	out, errOut := d.cliWant(t, 0, "", "teams", "create", "cli-a")
	key := strings.TrimSpace(out)
	f := strings.Fields(errOut)
	if !strings.HasPrefix(key, "e2b_") || len(f) < 2 || len(f[1]) != 36 {
		t.Fatalf("teams create: %q %q", out, errOut)
	}
	teamID := f[1]
	if out, _ := d.cliWant(t, 0, "", "teams", "ls"); !strings.Contains(out, teamID) || !strings.Contains(out, "cli-a") {
		t.Errorf("teams ls: %s", out)
	}
	as := func(k string, code int, args ...string) string {
		t.Helper()
		out, _ := d.cliWant(t, code, "", append([]string{"--api-key", k}, args...)...)
		return out
	}
	as(key, 1, "teams", "ls") // a team key is not an admin key
	key2 := strings.TrimSpace(as(key, 0, "keys", "create", "second"))
	ls := as(key2, 0, "keys", "ls")
	var id2 string
	for _, l := range strings.Split(ls, "\n") {
		if fs := strings.Fields(l); len(fs) > 1 && fs[1] == "second" {
			id2 = fs[0]
		}
	}
	if id2 == "" || !strings.Contains(ls, "first key") || strings.Contains(ls, key2) {
		t.Fatalf("keys ls: %s", ls)
	}
	as(key, 0, "keys", "rm", id2)
	as(key2, 1, "ls")
	as(key, 0, "ls")
	d.cliWant(t, 0, "", "teams", "rm", teamID)
	as(key, 1, "ls")
	d.cliWant(t, 1, "", "teams", "rm", teamID)
}
