package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// SetTenants enables team API keys (E2B's /api-keys and /teams for every
// team; /sbx/teams for admin keys).
func (s *Server) SetTenants(t *Tenants) {
	s.tenants = t
	if s.mgr != nil {
		s.mgr.SetDiskAdmission(s.reserveDisk) // a pause takes the team's disk as a snapshot does
	}
	h := s.handle
	h("GET /api-keys", s.listKeys)
	h("POST /api-keys", s.createKey)
	h("PATCH /api-keys/{apiKeyID}", s.renameKey)
	h("DELETE /api-keys/{apiKeyID}", s.revokeKey)
	h("POST /sbx/teams", s.admin(s.createTeam))
	h("GET /sbx/teams", s.admin(s.listTeams))
	h("PATCH /sbx/teams/{teamID}", s.admin(s.updateTeam))
	h("DELETE /sbx/teams/{teamID}", s.admin(s.deleteTeam))
}

// admin lets only admin keys through (403 otherwise): team management and
// the operator's node-wide endpoints (metrics, debug).
func (s *Server) admin(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !principalOf(r).Admin {
			WriteError(w, http.StatusForbidden, "this endpoint needs an admin key")
			return
		}
		fn(w, r)
	}
}

// keyMask is E2B's IdentifierMaskingDetails.
type keyMask struct {
	Prefix            string `json:"prefix"`
	ValueLength       int    `json:"valueLength"`
	MaskedValuePrefix string `json:"maskedValuePrefix"`
	MaskedValueSuffix string `json:"maskedValueSuffix"`
}

// teamKey is E2B's TeamAPIKey (Key is set once, at create: CreatedTeamAPIKey).
type teamKey struct {
	ID        string     `json:"id"`
	Key       string     `json:"key,omitempty"`
	Name      string     `json:"name"`
	Mask      keyMask    `json:"mask"`
	CreatedAt time.Time  `json:"createdAt"`
	CreatedBy any        `json:"createdBy"` // E2B's TeamUser; sbx has no users: null
	LastUsed  *time.Time `json:"lastUsed"`
}

func keyResp(k store.APIKey, key string) teamKey {
	t := teamKey{ID: k.ID, Key: key, Name: k.Name, CreatedAt: k.CreatedAt,
		Mask: keyMask{Prefix: k.Prefix, ValueLength: k.Length, MaskedValuePrefix: "", MaskedValueSuffix: k.Suffix}}
	if !k.LastUsed.IsZero() {
		lu := k.LastUsed
		t.LastUsed = &lu
	}
	return t
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	out := []teamKey{}
	for _, k := range s.tenants.Keys(teamOf(r)) {
		out = append(out, keyResp(k, ""))
	}
	writeJSON(w, http.StatusOK, out)
}

// keyName validates a key or team name.
func keyName(n string) (string, error) {
	n = strings.TrimSpace(n)
	if n == "" || len(n) > 128 {
		return "", fmt.Errorf("%w: name must be 1-128 characters", sandbox.ErrInvalid)
	}
	return n, nil
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if !decode(w, r, &req) {
		return
	}
	name, err := keyName(req.Name)
	var key string
	var rec store.APIKey
	if err == nil {
		key, rec, err = s.tenants.CreateKey(r.Context(), teamOf(r), name, principalOf(r).KeyID)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, keyResp(rec, key))
}

func (s *Server) renameKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if !decode(w, r, &req) {
		return
	}
	name, err := keyName(req.Name)
	if err == nil {
		err = s.tenants.RenameKey(r.Context(), teamOf(r), r.PathValue("apiKeyID"), name)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusOK) // E2B: 200 "Team API key updated", no body
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	if err := s.tenants.RevokeKey(r.Context(), teamOf(r), r.PathValue("apiKeyID")); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// newTeamID is a team id shaped as E2B's (a UUID).
func newTeamID() string { return newUUID() }

// teamCounts is what a team owns on this node (live sandboxes, snapshots,
// volumes, templates).
func (s *Server) teamCounts(ctx context.Context, team string) (map[string]int, error) {
	c := map[string]int{"sandboxes": 0, "snapshots": 0, "volumes": 0, "templates": 0}
	for _, in := range s.mgr.List() {
		if in.Team == team {
			c["sandboxes"]++
		}
	}
	snaps, err := s.mgr.Snapshots(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, sn := range snaps {
		if sn.Team == team {
			c["snapshots"]++
		}
	}
	if s.vols != nil {
		vs, err := s.vols.List(ctx, team)
		if err != nil {
			return nil, err
		}
		c["volumes"] = len(vs)
	}
	if s.builds != nil {
		ts, err := s.builds.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if owner, _ := s.tenants.st.TemplateOwner(ctx, t.TemplateID); owner == team {
				c["templates"]++
			}
		}
	}
	return c, nil
}
