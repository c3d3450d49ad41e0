package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/sbx-dev/sbx/internal/reqid"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/secrets"
	"github.com/sbx-dev/sbx/internal/untrusted"
	"github.com/sbx-dev/sbx/internal/volume"
)

// apiError is E2B's Error schema; code always equals the HTTP status.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// WriteError writes {code, message} with status; the message is bounded
// (boundText).
func WriteError(w http.ResponseWriter, status int, msg string) {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusInsufficientStorage:
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, apiError{Code: status, Message: boundText(msg)})
}

// maxErrorText bounds an error's text in an answer or a log line. Errors
// quote values of the request at most 64 characters each (%.64q); this is
// the backstop for one that does not, so that no answer echoes a request
// whole and no log line grows with one (before, a 1 MiB runtime name went
// whole into the 400 and the daemon's log).
const maxErrorText = 1024

// boundText is s cut to maxErrorText bytes on a rune boundary, marked with
// "..." when cut.
func boundText(s string) string {
	if c, cut := untrusted.Cut(s, maxErrorText); cut {
		return c + "..."
	}
	return s
}

// statusOf maps manager errors to HTTP statuses: the one place this happens.
func statusOf(err error) int {
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, sandbox.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, sandbox.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, sandbox.ErrBusy):
		return http.StatusTooManyRequests
	case errors.Is(err, sandbox.ErrQuota):
		return http.StatusInsufficientStorage
	case errors.Is(err, sandbox.ErrNotImpl):
		return http.StatusNotImplemented
	case errors.Is(err, sandbox.ErrNoSpace):
		return http.StatusInsufficientStorage
	case errors.Is(err, sandbox.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, volume.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, volume.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, volume.ErrExists), errors.Is(err, volume.ErrInUse):
		return http.StatusConflict
	case errors.Is(err, volume.ErrQuota), errors.Is(err, volume.ErrNoSpace):
		return http.StatusInsufficientStorage
	case errors.Is(err, volume.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, secrets.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, secrets.ErrInvalid), errors.Is(err, secrets.ErrPlaceholder):
		return http.StatusBadRequest
	case errors.Is(err, secrets.ErrExists):
		return http.StatusConflict
	case errors.Is(err, secrets.ErrLimit):
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// writeErr answers err with its status. An error no sentinel maps (500) is
// the daemon's own failure: its text may hold host paths (the data dir, a
// copy's cp(1) output) and other tenants' or the host's details, so the
// caller gets the request id and the log gets the cause (logRequest).
func writeErr(w http.ResponseWriter, err error) {
	status := statusOf(err)
	if status != http.StatusInternalServerError {
		WriteError(w, status, err.Error())
		return
	}
	noteCause(w, err)
	WriteError(w, status, "internal error: the daemon's log has its cause under request id "+w.Header().Get(reqid.Header))
}

// noteCause records err on every statusWriter w wraps, for the request's
// log line.
func noteCause(w http.ResponseWriter, err error) {
	for w != nil {
		if sw, ok := w.(*statusWriter); ok {
			sw.cause = err
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
