package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sbx-dev/sbx/internal/builder"
)

// requestOwned is POST /v3/templates for the request's team: a new name
// becomes the team's template; a name of the team's adds a build. Names are
// scoped to the team (as E2B's): another team's template of the same name
// is another template, never touched or told of.
func (s *Server) requestOwned(r *http.Request, req builder.BuildRequest) (*builder.Requested, error) {
	team := teamOf(r)
	ref := req.Name
	if ref == "" {
		ref = req.Alias
	}
	name, _, _ := strings.Cut(ref, ":")
	if _, owner, _, exists := s.templateOwner(r.Context(), team, name); !exists || owner != team {
		if err := s.templateRoom(r, team); err != nil {
			return nil, err
		}
	}
	if err := s.buildQuota(r); err != nil {
		return nil, err
	}
	req.Team = team
	return s.builds.RequestBuild(r.Context(), req)
}

// maxTemplatesPerTeam bounds the templates a team other than the default
// one holds: each is a row in the database every team shares and an entry
// of the registry that every template request resolves against and that
// each change reloads in full (2,156 template requests in 40 s made every
// team's GET /templates 0.22 s, and each request slower than the last).
// Requests for new names racing at the bound may pass it by the number in
// flight. A var for tests.
var maxTemplatesPerTeam = 1000

// templateRoom refuses a new template to team at maxTemplatesPerTeam
// (429).
func (s *Server) templateRoom(r *http.Request, team string) error {
	if s.tenants == nil || team == "" {
		return nil
	}
	n, err := s.tenants.st.CountTemplates(r.Context(), team)
	if err != nil {
		return err
	}
	if n >= maxTemplatesPerTeam {
		return fmt.Errorf("%w; delete some (DELETE /templates/{id})", quotaErr("templates", maxTemplatesPerTeam))
	}
	return nil
}

// buildQuota refuses a build when the team has its quota of builds waiting
// or running.
func (s *Server) buildQuota(r *http.Request) error {
	team := teamOf(r)
	if s.tenants == nil || team == "" {
		return nil
	}
	limit := s.tenants.effective(team).Builds
	if limit <= 0 {
		return nil
	}
	ts, err := s.builds.ListFor(r.Context(), func(owner string, _ bool) bool { return owner == team })
	if err != nil {
		return err
	}
	n := 0
	for _, t := range ts {
		if t.BuildStatus == "building" || t.BuildStatus == "waiting" {
			n++
		}
	}
	if n >= limit {
		return quotaErr("template builds at once", limit)
	}
	return nil
}
