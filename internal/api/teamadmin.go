package api

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// The admin side of teams: POST/GET /sbx/teams, PATCH and DELETE
// /sbx/teams/{teamID}. Admin keys only (SetTenants wraps them in admin).

// teamInfo is a team as /sbx/teams shows it.
type teamInfo struct {
	TeamID    string         `json:"teamID"`
	Name      string         `json:"name"`
	CreatedAt time.Time      `json:"createdAt"`
	Quota     store.Quota    `json:"quota"`
	Keys      int            `json:"keys"`
	Owns      map[string]int `json:"owns,omitempty"`
}

type teamReq struct {
	Name  *string      `json:"name"`
	Quota *store.Quota `json:"quota"`
}

func (s *Server) createTeam(w http.ResponseWriter, r *http.Request) {
	var req teamReq
	if !decode(w, r, &req) {
		return
	}
	if req.Name == nil {
		WriteError(w, http.StatusBadRequest, "name is required")
		return
	}
	if err := checkTeamName(*req.Name); err != nil {
		writeErr(w, err)
		return
	}
	tm := &store.Team{ID: newTeamID(), Name: *req.Name, CreatedAt: time.Now().UTC()}
	if req.Quota != nil {
		tm.Quota = *req.Quota
	}
	key, _, err := s.tenants.CreateTeam(r.Context(), tm, principalOf(r).KeyID)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"teamID": tm.ID, "name": tm.Name, "apiKey": key, "quota": tm.Quota})
}

func (s *Server) listTeams(w http.ResponseWriter, r *http.Request) {
	out := []teamInfo{}
	for _, tm := range s.tenants.Teams() {
		c, err := s.teamCounts(r.Context(), tm.ID)
		if err != nil {
			writeErr(w, err)
			return
		}
		out = append(out, teamInfo{TeamID: tm.ID, Name: tm.Name, CreatedAt: tm.CreatedAt, Quota: tm.Quota,
			Keys: len(s.tenants.Keys(tm.ID)), Owns: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	writeJSON(w, http.StatusOK, out)
}

// teamNotFound is the answer for an unknown team id (the default team
// cannot be changed or removed through this API either).
func teamNotFound(id string) error {
	return sandbox.NotFound("team %q not found", truncate(id, 64))
}

func (s *Server) updateTeam(w http.ResponseWriter, r *http.Request) {
	var req teamReq
	if !decode(w, r, &req) {
		return
	}
	tm, ok := s.tenants.team(r.PathValue("teamID"))
	if !ok {
		writeErr(w, teamNotFound(r.PathValue("teamID")))
		return
	}
	c := *tm
	if req.Name != nil && *req.Name != tm.Name {
		if err := checkTeamName(*req.Name); err != nil {
			writeErr(w, err)
			return
		}
		c.Name = *req.Name
	}
	if req.Quota != nil {
		c.Quota = *req.Quota
	}
	if err := s.tenants.PutTeam(r.Context(), &c); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, teamInfo{TeamID: c.ID, Name: c.Name, CreatedAt: c.CreatedAt, Quota: c.Quota, Keys: len(s.tenants.Keys(c.ID))})
}

// deleteTeam removes a team and revokes its keys at once. It refuses (409)
// while the team owns anything on the node (sandboxes, snapshots, volumes,
// templates): the team removes those with its own key first. Nothing is
// killed behind a tenant's back, and nothing is left unreachable.
func (s *Server) deleteTeam(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("teamID")
	if _, ok := s.tenants.team(id); !ok {
		writeErr(w, teamNotFound(id))
		return
	}
	c, err := s.teamCounts(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	var held []string
	for _, k := range []string{"sandboxes", "snapshots", "volumes", "templates"} {
		if c[k] > 0 {
			held = append(held, fmt.Sprintf("%d %s", c[k], k))
		}
	}
	if len(held) > 0 {
		writeErr(w, fmt.Errorf("%w: team %s still owns %s; remove them first", sandbox.ErrConflict, id, strings.Join(held, ", ")))
		return
	}
	if err := s.tenants.DeleteTeam(r.Context(), id); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
