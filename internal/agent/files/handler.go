// Package files is the agent's HTTP /files endpoint, wire-compatible with
// E2B's envd: GET /files downloads a file (optionally gzip-encoded), POST
// /files uploads one or several files (multipart/form-data or a raw
// application/octet-stream body). Requests are authorized by X-Access-Token
// or, without it, by a signed URL (see Sign).
package files

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// handler serves /files. It holds no per-request state.
type handler struct {
	state *identity.State
	users identity.Files
}

// NewHandler returns the /files handler; st supplies the access token and the
// default user, users the account databases.
func NewHandler(st *identity.State, users identity.Files) http.Handler {
	h := &handler{state: st, users: users}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /files", h.download)
	mux.HandleFunc("POST /files", h.upload)
	return mux
}

// httpError is an error with the status it is answered with.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

func withStatus(status int, err error) error { return &httpError{status: status, err: err} }

// statusOf maps an error to its HTTP status, once for the package.
func statusOf(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.status
	}
	switch fsutil.Category(err) {
	case fsutil.ErrInvalid, fsutil.ErrExists:
		return http.StatusBadRequest
	case fsutil.ErrNotFound:
		return http.StatusNotFound
	case fsutil.ErrPermission:
		return http.StatusForbidden
	case fsutil.ErrNoSpace:
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}

// writeError answers with envd's JSON error body {code, message}.
func writeError(w http.ResponseWriter, err error) {
	status := statusOf(err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Encoding")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{status, err.Error()})
}
