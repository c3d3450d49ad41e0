package integration

import (
	"strings"
	"testing"
)

// TestDashboardKeepsKey: the key a browser signed in with never comes back
// to it, not even through the API forward (E2B's GET /teams answers the
// caller's own key): whoever holds a session, which sign-out or 12 h end,
// must not turn it into the key, which outlives both.
func TestDashboardKeepsKey(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	tm := d.newTeam("dash-key", nil)
	s := dashSignIn(t, d, tm.Key)
	for _, p := range []string{"/dashboard/api/teams", "/dashboard/api/teams/", "/dashboard/api//teams", "/dashboard/api/teams?x=1",
		"/dashboard/api/%74eams", "/dashboard/api/api-keys", "/dashboard/api/v2/sandboxes", "/dashboard/api/teams/" + tm.ID + "/metrics"} {
		if code, body := s.do("GET", p, false, nil); strings.Contains(string(body), tm.Key) {
			t.Errorf("GET %s: %d, the body holds the session's key", p, code)
		}
	}
}
