package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// requestOwned is POST /v3/templates for the request's team: a new name
// becomes the team's template; a name of the team's adds a build; a name
// another team holds is refused. Template names are one namespace for the
// node (as E2B's aliases): the refusal says the name is taken, which tells
// that a name exists, never an id.
func (s *Server) requestOwned(r *http.Request, req builder.BuildRequest) (*builder.Requested, error) {
	team := teamOf(r)
	ref := req.Name
	if ref == "" {
		ref = req.Alias
	}
	_, owner, _, exists := s.templateOwner(r.Context(), ref)
	if exists && owner != team {
		name, _, _ := strings.Cut(ref, ":")
		return nil, fmt.Errorf("%w: template name %q is taken", sandbox.ErrConflict, truncate(name, 64))
	}
	if !exists {
		if err := s.templateRoom(r, team); err != nil {
			return nil, err
		}
	}
	if err := s.buildQuota(r); err != nil {
		return nil, err
	}
	res, err := s.builds.RequestBuild(r.Context(), req)
	if err != nil || s.tenants == nil {
		return res, err
	}
	if err := s.tenants.st.SetTemplateOwner(r.Context(), res.TemplateID, team); err != nil {
		return nil, err
	}
	if _, owner, _, _ := s.templateOwner(r.Context(), res.TemplateID); owner != team {
		// Two teams raced for a new name: the first owner row wins.
		return nil, fmt.Errorf("%w: template name %q is taken", sandbox.ErrConflict, truncate(ref, 64))
	}
	return res, nil
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
	ts, err := s.builds.List(r.Context())
	if err != nil {
		return err
	}
	n := 0
	for _, t := range ts {
		if (t.BuildStatus == "building" || t.BuildStatus == "waiting") && s.ownTemplate(r.Context(), team, t.TemplateID, false) == nil {
			n++
		}
	}
	if n >= limit {
		return quotaErr("template builds at once", limit)
	}
	return nil
}
