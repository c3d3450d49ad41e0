package builder

import (
	"fmt"
	"strings"
)

// Hidden reports whether ref (an id or "namespace/name", with an optional
// ":tag") names a template of a team other than team that team may not
// use (private). E2B's build API resolves such a base by id or by
// namespace/name and then refuses it (setTemplateSource: "you have no
// access to use '<ref>' as a base template"), so that much of a private
// template's existence E2B itself tells; a bare name resolves only in the
// caller's team, and reads as none.
func (s *Service) Hidden(team, ref string) bool {
	name, _, _ := strings.Cut(ref, ":")
	r := s.reg
	r.mu.RLock()
	defer r.mu.RUnlock()
	id, ok := name, false
	if _, ok = r.idx.templates[name]; !ok {
		ns, n, named := strings.Cut(name, "/")
		if !named || ns == "" {
			return false
		}
		id, ok = r.idx.byName[nameKey{teamOfNamespace(ns), n}]
	}
	return ok && r.idx.owner[id] != team && !r.idx.templates[id].Public
}

// noAccessBase is E2B's reason for a base template of another team's that
// the building team may not use.
func noAccessBase(ref string) error {
	return fmt.Errorf("you have no access to use '%s' as a base template", shortRef(ref))
}
