package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sbx-dev/sbx/internal/secrets"
)

// secretInfo is E2B's Secret schema: metadata, never a value.
type secretInfo struct {
	SecretID       string            `json:"secretID"`
	Name           string            `json:"name"`
	CurrentVersion int64             `json:"currentVersion"`
	Metadata       map[string]string `json:"metadata"`
	CreatedAt      time.Time         `json:"createdAt"`
	UpdatedAt      time.Time         `json:"updatedAt"`
}

// secretBody is E2B's NewSecret and SecretUpdate. Value is write-only.
type secretBody struct {
	Name     string            `json:"name"`
	Value    string            `json:"value"`
	Metadata map[string]string `json:"metadata"`
}

// SetSecrets serves the Secrets API (/secrets) from sm and lets network
// rules refer to its secrets. Every route is scoped to the caller's team:
// another team's secret answers as a missing one (same status and body).
func (s *Server) SetSecrets(sm *secrets.Manager) {
	s.secrets = sm
	h := s.handle
	h("POST /secrets", s.createSecret)
	h("GET /secrets", s.listSecrets)
	h("GET /secrets/{secretID}", s.getSecret)
	h("POST /secrets/{secretID}", s.updateSecret)
	h("DELETE /secrets/{secretID}", s.deleteSecret)
}

func toSecretInfo(i *secrets.Info) secretInfo {
	return secretInfo{SecretID: i.ID, Name: i.Name, CurrentVersion: i.Version, Metadata: i.Metadata,
		CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt}
}

func (s *Server) createSecret(w http.ResponseWriter, r *http.Request) {
	var b secretBody
	if !decode(w, r, &b) {
		return
	}
	i, err := s.secrets.Create(r.Context(), teamOf(r), b.Name, b.Value, b.Metadata)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, toSecretInfo(i))
}

func (s *Server) updateSecret(w http.ResponseWriter, r *http.Request) {
	var b secretBody
	if !decode(w, r, &b) {
		return
	}
	i, err := s.secrets.Update(r.Context(), teamOf(r), r.PathValue("secretID"), b.Value, b.Metadata)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toSecretInfo(i))
}

func (s *Server) getSecret(w http.ResponseWriter, r *http.Request) {
	i, err := s.secrets.Get(r.Context(), teamOf(r), r.PathValue("secretID"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toSecretInfo(i))
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	if err := s.secrets.Delete(r.Context(), teamOf(r), r.PathValue("secretID")); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listSecrets is GET /secrets?limit=&nextToken=: a page by name, the next
// page's token in X-Next-Token (absent on the last page).
func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			WriteError(w, http.StatusBadRequest, "limit must be a positive integer")
			return
		}
		limit = n
	}
	list, next, err := s.secrets.List(r.Context(), teamOf(r), r.URL.Query().Get("nextToken"), limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]secretInfo, 0, len(list))
	for _, i := range list {
		out = append(out, toSecretInfo(i))
	}
	if next != "" {
		w.Header().Set("X-Next-Token", next)
	}
	writeJSON(w, http.StatusOK, out)
}
