package dashboard

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// maxUpload bounds one upload through the dashboard.
const maxUpload = 256 << 20

// fileEntry is one row of the file browser.
type fileEntry struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Type    string    `json:"type"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
}

// conn opens the session's sandbox {id}; on error it has answered.
func (s *Server) conn(w http.ResponseWriter, r *http.Request) (*client.SandboxConn, bool) {
	sc, err := s.cfg.Sandboxes.Conn(r.Context(), sessionOf(r).key, r.PathValue("id"))
	if err != nil {
		writeClientError(w, err)
		return nil, false
	}
	return sc, true
}

// listFiles lists the directory ?path= (default /) of a sandbox.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.conn(w, r)
	if !ok {
		return
	}
	dir := r.URL.Query().Get("path")
	if dir == "" {
		dir = "/"
	}
	es, err := sc.ListDir(r.Context(), dir, 1)
	if err != nil {
		writeClientError(w, err)
		return
	}
	out := make([]fileEntry, 0, len(es))
	for _, e := range es {
		out = append(out, fileEntry{Name: e.Name, Path: e.Path, Type: e.Type, Size: e.Size, ModTime: e.ModTime})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// download streams the file ?path= as an attachment.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.conn(w, r)
	if !ok {
		return
	}
	p := r.URL.Query().Get("path")
	rc, err := sc.OpenFile(r.Context(), p)
	if err != nil {
		writeClientError(w, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	_, _ = io.Copy(w, rc)
}

// upload writes the request body to ?path= (as the sandbox's default user,
// with its permissions), at most maxUpload bytes.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.conn(w, r)
	if !ok {
		return
	}
	p := r.URL.Query().Get("path")
	if p == "" {
		writeError(w, http.StatusBadRequest, "path is required")
		return
	}
	body := http.MaxBytesReader(w, r.Body, maxUpload)
	if err := sc.WriteFileFrom(r.Context(), p, body, ""); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "upload larger than 256 MiB")
			return
		}
		writeClientError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeClientError maps an error of package client to its status.
func writeClientError(w http.ResponseWriter, err error) {
	status := http.StatusBadGateway
	var ae *client.APIError
	switch {
	case errors.As(err, &ae):
		status = ae.Status
	case errors.Is(err, client.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, client.ErrBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, client.ErrForbidden):
		status = http.StatusForbidden
	case errors.Is(err, client.ErrUnauthorized):
		status = http.StatusUnauthorized
	case errors.Is(err, client.ErrUnavailable):
		status = http.StatusServiceUnavailable
	}
	writeError(w, status, err.Error())
}
