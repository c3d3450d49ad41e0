package api

import (
	"fmt"
	"strings"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template"
)

// defaultTeamName is what GET /teams calls the admin keys' team; no other
// team may take it.
const defaultTeamName = "default"

// teamNameRule is a team name's form, checked when a team is created or
// renamed (names stored before the rule keep working as they are).
const teamNameRule = "1-64 characters of [a-z0-9._-], starting with a letter or digit"

// checkTeamName answers ErrInvalid (400) naming the rule for a name
// outside it: a template's name (template.ValidName: the characters, the
// length, no leading '.') that starts with neither '-' nor '_' either.
func checkTeamName(n string) error {
	if !template.ValidName(n) || strings.IndexByte("-_", n[0]) >= 0 {
		return fmt.Errorf("%w: team name %q: must be %s", sandbox.ErrInvalid, truncate(n, 64), teamNameRule)
	}
	return nil
}

// nameFree answers ErrConflict (409) when tm takes a name (ignoring case)
// that another team, or the default team, has. Keeping its own name is
// always allowed, so teams with duplicate names from before the rule can
// still change their quotas. Called with t.naming held.
func (t *Tenants) nameFree(tm *store.Team) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if old, ok := t.teams[tm.ID]; ok && old.Name == tm.Name {
		return nil
	}
	taken := strings.EqualFold(tm.Name, defaultTeamName)
	for id, o := range t.teams {
		taken = taken || id != tm.ID && strings.EqualFold(o.Name, tm.Name)
	}
	if taken {
		return fmt.Errorf("%w: team name %q is taken", sandbox.ErrConflict, tm.Name)
	}
	return nil
}
