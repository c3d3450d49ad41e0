package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// The ownership gate: every route behind auth passes through owns before
// its handler. A path value naming a record of another team is answered
// exactly as one naming no record: the same error, built by the same code
// (sandbox.Manager.Owned, templateNotFound), so neither the status, the
// body nor the path taken tells them apart. Body fields that name records
// (templateID, fromTemplate, tag targets, volume mounts) are checked where
// they are decoded, with the same helpers.

// owns checks the path values of r against its principal; on refusal it has
// answered and returns false.
func (s *Server) owns(w http.ResponseWriter, r *http.Request) bool {
	team := teamOf(r)
	if id := r.PathValue("id"); id != "" && sandbox.ValidID(id) {
		if _, err := s.ownedHere(r.Context(), team, id); err != nil && !s.historyOwned(team, id) {
			writeErr(w, err)
			return false
		}
	}
	ref := r.PathValue("template")
	if a := r.PathValue("a"); a != "" && a != "aliases" {
		// GET /templates/{template}/tags: a public template's (a built-in's
		// too) are every team's, as E2B lists them (its
		// TestGetTemplateTagsPublicTemplateAsForeignTeam)
		if err := s.useTemplate(r.Context(), team, a, false); err != nil {
			writeErr(w, err)
			return false
		}
	}
	if ref != "" {
		if err := s.ownTemplate(r.Context(), team, ref, r.Method == http.MethodDelete); err != nil {
			writeErr(w, err)
			return false
		}
	}
	return true
}

// ownedHere is Manager.Owned, after taking the sandbox over when it is
// not on this node but paused on the cluster's shared storage by a node
// that is gone (Manager.AdoptMoved: the API front sends its requests here).
func (s *Server) ownedHere(ctx context.Context, team, id string) (sandbox.Info, error) {
	in, err := s.mgr.Owned(team, id)
	if errors.Is(err, sandbox.ErrNotFound) && s.mgr.AdoptMoved(ctx, team, id) == nil {
		in, err = s.mgr.Owned(team, id)
	}
	return in, err
}

// historyOwned reports whether team owns the kept history (metrics, logs)
// of sandbox id, which outlives the sandbox (package telemetry).
func (s *Server) historyOwned(team, id string) bool {
	if s.tel == nil {
		return false
	}
	t, ok := s.tel.TeamOfSandbox(id)
	return ok && t == publicTeamID(team)
}

// templateNotFound is the one answer for a template (or snapshot) ref that
// does not exist or is not the caller's.
func templateNotFound(ref string) error {
	return sandbox.TemplateNotFound(ref)
}

// templateOwner resolves ref ("name", "namespace/name", "name:tag" or an
// id) as team names it to its template id, owning team and visibility; ok
// is false when no template has it. Built-in templates belong to the
// default team and are public.
func (s *Server) templateOwner(ctx context.Context, team, ref string) (id, owner string, public, ok bool) {
	id, public, ok = s.templateRef(team, ref)
	if !ok {
		return "", "", false, false
	}
	owner, err := s.templateTeam(ctx, id)
	if err != nil {
		return "", "", false, false // fail closed
	}
	return id, owner, public, true
}

// templateRef resolves ref as team names it (builder.Service.Alias) to its
// template id and visibility (no store read); ok is false when no template
// has it.
func (s *Server) templateRef(team, ref string) (id string, public, ok bool) {
	name, _, _ := strings.Cut(ref, ":")
	if s.builds == nil {
		_, err := s.mgr.Templates().Get(name)
		return name, true, err == nil
	}
	id, public, err := s.builds.Alias(team, name)
	return id, public, err == nil
}

// templateTeam is the team owning template id ("": the default team, also
// without builds or teams), a store read.
func (s *Server) templateTeam(ctx context.Context, id string) (string, error) {
	if s.builds == nil || s.tenants == nil {
		return "", nil
	}
	return s.tenants.st.TemplateOwner(ctx, id)
}

// ownTemplate is nil if team owns the template ref, or (snapshots) the
// snapshot ref; else templateNotFound.
func (s *Server) ownTemplate(ctx context.Context, team, ref string, snapshots bool) error {
	if _, owner, _, ok := s.templateOwner(ctx, team, ref); ok {
		if owner == team {
			return nil
		}
		return templateNotFound(ref)
	}
	if snapshots {
		if _, err := s.mgr.OwnedSnapshot(ctx, team, ref); err == nil {
			return nil
		}
	}
	return templateNotFound(ref)
}

// useTemplate is nil if team may start sandboxes from (or build on) the
// template ref: its own or a public one, or (snapshots) its own snapshot.
// Anything else, another team's or nothing at all, is templateNotFound
// from this one code path. A public template needs no owner: every create
// from one is spared a store read (one connection, queued behind the
// writes of a burst).
func (s *Server) useTemplate(ctx context.Context, team, ref string, snapshots bool) error {
	if id, public, ok := s.templateRef(team, ref); ok {
		if public {
			return nil
		}
		if owner, err := s.templateTeam(ctx, id); err == nil {
			if owner == team {
				return nil
			}
			return templateNotFound(ref)
		}
	}
	if snapshots {
		if _, err := s.mgr.OwnedSnapshot(ctx, team, ref); err == nil {
			return nil
		}
	}
	return templateNotFound(ref)
}

// scoped is the ref the builder's calls take for ref as r's team names it
// (builder.Service.Scoped): a template of the team's reach by its id.
func (s *Server) scoped(r *http.Request, ref string) string {
	if s.builds == nil {
		return ref
	}
	return s.builds.Scoped(teamOf(r), ref)
}
