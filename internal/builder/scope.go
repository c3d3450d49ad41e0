package builder

import (
	"strings"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/telemetry"
	"github.com/sbx-dev/sbx/internal/template"
)

// Template names are scoped to their team, as E2B's: team A and team B may
// each hold "my-app", and a bare name resolves to the caller's team's
// template (then a built-in, whose names stay reserved for every team).
// Another team's template is named "<namespace>/<name>" and resolves only
// when it is public. A team's namespace is its public id (Namespace): stable,
// unique and URL-safe (a team's display name is neither unique nor fixed).
// The default team ("") keeps bare names exactly as before teams had
// namespaces; records without an owner row are its.

// nameKey is a template name within its team.
type nameKey struct{ team, name string }

// Namespace is the namespace of team's templates ("" is the default team).
func Namespace(team string) string { return telemetry.TeamOf(team) }

// teamOfNamespace is the team whose Namespace is ns.
func teamOfNamespace(ns string) string {
	if ns == telemetry.DefaultTeam {
		return ""
	}
	return ns
}

// lookupIn finds a user template for team: by id (any team's: the API's
// ownership gate decides who may use it), by team's own name, or by
// "namespace/name" when that template is team's or public. ok is false for
// every other case alike, so a private name of another team reads as none.
func (r *Registry) lookupIn(team, ref string) (*store.TemplateRec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if t, ok := r.idx.templates[ref]; ok {
		return t, true
	}
	owner, name := team, ref
	if ns, n, ok := strings.Cut(ref, "/"); ok {
		if ns == "" {
			return nil, false
		}
		owner, name = teamOfNamespace(ns), n
	}
	id, ok := r.idx.byName[nameKey{owner, name}]
	if !ok {
		return nil, false
	}
	t := r.idx.templates[id]
	if owner != team && !t.Public {
		return nil, false
	}
	return t, true
}

// TeamOf is the team owning template id ("" the default team or none).
func (r *Registry) TeamOf(id string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.idx.owner[id]
}

// Scoped resolves ref ("name", "namespace/name", an id, each with an
// optional ":tag") for team to the ref that names the same thing to the
// team-less calls (lookup, Get: the default team's view): a user template
// in team's reach becomes its id with the tag; a built-in's name, and any
// ref of the default team, stays as it is; anything else of another team
// gets team's namespace in front, which names no template of the default
// team, so no team reaches the default team's private template by its name.
func (r *Registry) Scoped(team, ref string) string {
	name, tag, hasTag := strings.Cut(ref, ":")
	if t, ok := r.lookupIn(team, name); ok {
		if hasTag {
			return t.ID + ":" + tag
		}
		return t.ID
	}
	if team == "" || r.isBuiltin(name) {
		return ref
	}
	return Namespace(team) + "/" + ref
}

// isBuiltin says whether name is a built-in template's (defined or built).
func (r *Registry) isBuiltin(name string) bool {
	if _, ok := template.Definitions[name]; ok {
		return true
	}
	if r.Builtins == nil || strings.Contains(name, "/") {
		return false
	}
	_, err := r.Builtins.Get(name)
	return err == nil
}

// GetFor implements sandbox.TeamTemplates: Get of ref as team names it.
// A miss may have reloaded the index (a template made through another
// node): the ref is scoped again and retried once if that changed it.
func (r *Registry) GetFor(team, ref string) (sandbox.Template, error) {
	sc := r.Scoped(team, ref)
	t, err := r.Get(sc)
	if again := r.Scoped(team, ref); err != nil && again != sc {
		return r.Get(again)
	}
	return t, err
}

// Scoped is Registry.Scoped: the ref team's template calls pass on.
func (s *Service) Scoped(team, ref string) string { return s.reg.Scoped(team, ref) }

// IsBuiltin says whether name is a built-in template's (its name is
// reserved: no team holds a template of that name).
func (s *Service) IsBuiltin(name string) bool { return s.reg.isBuiltin(name) }

// NamesFor shows in's names as team names them: a user template of another
// team (listed because it is public) as "namespace/name", as E2B's names
// field ("namespace/alias format when namespaced"); the team's own and the
// built-ins as they are.
func (s *Service) NamesFor(team string, in Info) Info {
	s.reg.mu.RLock()
	_, user := s.reg.idx.templates[in.TemplateID]
	owner := s.reg.idx.owner[in.TemplateID]
	s.reg.mu.RUnlock()
	if !user || owner == team {
		return in
	}
	names := make([]string, len(in.Names))
	for i, n := range in.Names {
		names[i] = Namespace(owner) + "/" + n
	}
	in.Names, in.Aliases = names, names
	return in
}
