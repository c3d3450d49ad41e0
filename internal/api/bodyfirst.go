package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// A bodyCheck validates a request's body before the ownership gate looks
// its path ids up, as E2B's handlers parse and validate the body (400)
// before they look the sandbox up (404): POST /sandboxes/{id}/fork
// {"count": 0} on an id nobody holds is E2B's 400 "count", not 404. It
// answers and returns false on refusal. The handler still decodes the body
// itself (peek leaves it readable). The answer depends on the body alone,
// so it tells nothing of whether the id exists or whose it is.
type bodyCheck func(s *Server, w http.ResponseWriter, r *http.Request) bool

// handleChecked is handle for a route whose body check runs before the
// ownership gate.
func (s *Server) handleChecked(pattern string, check bodyCheck, fn http.HandlerFunc) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, s.authChecked(check, fn))
}

// peek decodes r's JSON body into v as decode does (answering a bad one)
// and leaves r.Body to be read again from the start.
func peek(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", maxBody))
		return false
	case err != nil:
		WriteError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	cp := *r
	cp.Body = io.NopCloser(bytes.NewReader(b))
	return decode(w, &cp, v)
}

// checkTimeoutBody checks connect's optional {"timeout": seconds}, as
// E2B's connect refuses a timeout past the team's limit first.
func checkTimeoutBody(s *Server, w http.ResponseWriter, r *http.Request) bool {
	var req struct {
		Timeout *int64 `json:"timeout"`
	}
	if !peek(w, r, &req) {
		return false
	}
	return answerInvalid(w, s.optTimeout(req.Timeout))
}

// checkForkBody checks fork's count and timeout, as E2B's fork does
// (validateAndParseTimeout, "Count must be at least 1") before its lookup.
func checkForkBody(s *Server, w http.ResponseWriter, r *http.Request) bool {
	var req struct {
		Count   *int   `json:"count"`
		Timeout *int64 `json:"timeout"`
	}
	if !peek(w, r, &req) {
		return false
	}
	var err error
	if req.Count != nil {
		err = sandbox.CheckForkCount(*req.Count)
	}
	if err == nil {
		err = s.optTimeout(req.Timeout)
	}
	return answerInvalid(w, err)
}

// checkSnapshotBody checks a snapshot's name, as E2B's snapshots route
// parses the name (400 "Invalid name") before its lookup.
func checkSnapshotBody(_ *Server, w http.ResponseWriter, r *http.Request) bool {
	var req struct {
		Name string `json:"name"`
	}
	return peek(w, r, &req) && answerInvalid(w, sandbox.CheckSnapshotName(req.Name))
}

// The bodies of the routes shapeOf checks, shared with their handlers.
type (
	timeoutReq struct {
		Timeout *int64 `json:"timeout"`
	}
	refreshReq struct {
		Duration *int64 `json:"duration"`
	}
	pauseReq struct {
		Memory *bool `json:"memory"`
	}
	resumeReq struct {
		Timeout   *int64 `json:"timeout"`
		AutoPause *bool  `json:"autoPause"`
		Memory    *bool  `json:"memory"`
	}
)

// shapeOf is a bodyCheck that decodes the body into a T, the route's own
// request type, and checks nothing more: E2B parses every body into its
// type before its lookup, and checks the values of these (timeout,
// refreshes, pause, resume, network) after it.
func shapeOf[T any]() bodyCheck {
	return func(_ *Server, w http.ResponseWriter, r *http.Request) bool {
		var req T
		return peek(w, r, &req)
	}
}

// optTimeout is seconds' error for a timeout given, nil for none.
func (s *Server) optTimeout(v *int64) error {
	if v == nil {
		return nil
	}
	_, err := seconds(*v, s.mgr.Config().MaxTimeout)
	return err
}

// answerInvalid answers err (if any) and reports whether there was none.
func answerInvalid(w http.ResponseWriter, err error) bool {
	if err != nil {
		writeErr(w, err)
		return false
	}
	return true
}
