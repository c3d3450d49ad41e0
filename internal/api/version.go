package api

import (
	"net/http"

	"github.com/sbx-dev/sbx/internal/version"
)

// version answers GET /sbx/version: the daemon's build (authenticated, like
// the rest of the API but /health).
func (s *Server) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, version.Get())
}
