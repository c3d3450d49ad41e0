package api

import (
	"net/http"
	"time"

	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/telemetry"
)

// E2B's team routes for the caller's own team (a key belongs to one team).
// Team routes for any other id, another team's or none, answer 403, as E2B
// does for a team the caller is not a member of.

// team is E2B's Team.
type team struct {
	TeamID    string `json:"teamID"`
	Name      string `json:"name"`
	APIKey    string `json:"apiKey"`
	IsDefault bool   `json:"isDefault"`
	// Slug is the team's template namespace (builder.Namespace): another
	// team names the team's public templates "<slug>/<name>".
	Slug string `json:"slug"`
}

// teams answers GET /teams: the caller's team, with the key it called with
// (E2B returns a key of the team; the caller's own is the one it has).
func (s *Server) teams(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	name := defaultTeamName
	if tm, ok := s.tenants.team(p.Team); ok {
		name = tm.Name
	}
	writeJSON(w, http.StatusOK, []team{{TeamID: p.TeamID(), Name: name, APIKey: r.Header.Get("X-API-Key"), IsDefault: true,
		Slug: builder.Namespace(p.Team)}})
}

// teamID returns the {teamID} path value if the caller belongs to it;
// otherwise it answers 403.
func teamID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("teamID")
	if id != principalOf(r).TeamID() {
		WriteError(w, http.StatusForbidden, "you are not a member of team \""+truncate(id, 64)+"\"")
		return "", false
	}
	return id, true
}

// teamMetric is E2B's TeamMetric.
type teamMetric struct {
	Timestamp           time.Time `json:"timestamp"`
	TimestampUnix       int64     `json:"timestampUnix"`
	ConcurrentSandboxes int       `json:"concurrentSandboxes"`
	SandboxStartRate    float64   `json:"sandboxStartRate"`
}

// teamMetrics answers GET /teams/{teamID}/metrics?start&end: the team's
// running sandboxes and start rate per telemetry.Step.
func (s *Server) teamMetrics(w http.ResponseWriter, r *http.Request) {
	id, ok := teamID(w, r)
	if !ok {
		return
	}
	win, ok := window(w, r)
	if !ok {
		return
	}
	out := []teamMetric{}
	if s.tel != nil {
		for _, smp := range s.tel.Team(id, win) {
			t := smp.Time.UTC()
			out = append(out, teamMetric{t, t.Unix(), smp.Concurrent, smp.StartRate})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// teamMetricsMax answers GET /teams/{teamID}/metrics/max?metric=&start&end:
// the largest value of concurrent_sandboxes or sandbox_start_rate in the
// window and when it was reached.
func (s *Server) teamMetricsMax(w http.ResponseWriter, r *http.Request) {
	id, ok := teamID(w, r)
	if !ok {
		return
	}
	win, ok := window(w, r)
	if !ok {
		return
	}
	m := telemetry.TeamMetric(r.URL.Query().Get("metric"))
	if m != telemetry.ConcurrentSandboxes && m != telemetry.SandboxStartRate {
		WriteError(w, http.StatusBadRequest, "metric must be concurrent_sandboxes or sandbox_start_rate")
		return
	}
	var v float64
	at := time.Now()
	if s.tel != nil {
		v, at, _ = s.tel.MaxTeam(id, m, win)
	}
	at = at.UTC()
	writeJSON(w, http.StatusOK, map[string]any{"timestamp": at, "timestampUnix": at.Unix(), "value": v})
}
