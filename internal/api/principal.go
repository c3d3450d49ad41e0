package api

import (
	"context"
	"net/http"
	"sort"

	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/telemetry"
)

// Principal is who a request acts for: the team whose records it may see
// ("" is the default team) and whether it holds an admin key (the default
// team's key, which also manages teams).
type Principal struct {
	Team  string
	Admin bool
	KeyID string // for audit records; never the key
}

// TeamID is the team's id as the API shows it.
func (p Principal) TeamID() string { return publicTeamID(p.Team) }

func publicTeamID(team string) string { return telemetry.TeamOf(team) }

type principalKey struct{}

func withPrincipal(r *http.Request, p Principal) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
}

// principalOf is the principal auth put on r. A request that did not pass
// auth has none: the zero Principal is the default team without admin
// rights, which is never reached by an unauthenticated route's handler.
func principalOf(r *http.Request) Principal {
	if r == nil {
		return Principal{}
	}
	p, _ := r.Context().Value(principalKey{}).(Principal)
	return p
}

// teamOf is the owner of the records a request may see.
func teamOf(r *http.Request) string { return principalOf(r).Team }

func sortKeys(ks []store.APIKey) {
	sort.Slice(ks, func(i, j int) bool {
		if !ks[i].CreatedAt.Equal(ks[j].CreatedAt) {
			return ks[i].CreatedAt.Before(ks[j].CreatedAt)
		}
		return ks[i].ID < ks[j].ID
	})
}

// Authenticate resolves an API key as every authenticated route does: ok
// is false for an unknown or revoked key; team is the key's team id as the
// API shows it. The web dashboard signs in with it (internal/dashboard).
func (s *Server) Authenticate(key string) (team string, ok bool) {
	p, ok := s.principal(key)
	if !ok {
		return "", false
	}
	return p.TeamID(), true
}
