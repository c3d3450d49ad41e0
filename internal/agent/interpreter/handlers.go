package interpreter

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// maxBodyBytes bounds request bodies (code included).
const maxBodyBytes = 16 << 20

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, "OK") })
	mux.HandleFunc("POST /execute", s.handleExecute)
	mux.HandleFunc("POST /contexts", s.handleCreate)
	mux.HandleFunc("GET /contexts", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.list()) })
	mux.HandleFunc("DELETE /contexts/{id}", s.handleDelete)
	mux.HandleFunc("POST /contexts/{id}/restart", s.handleRestart)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no route for "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	})
	return mux
}

type createRequest struct {
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	k, err := s.newContext(req.Language, req.Cwd)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := k.restart(r.Context()); err != nil { // start the kernel now, as E2B does
		s.remove(k.ID) //nolint:errcheck // just created
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, k.Context)
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	if err := s.remove(r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, nil)
}

func (s *Server) handleRestart(w http.ResponseWriter, r *http.Request) {
	k, err := s.lookup(r.PathValue("id"))
	if err == nil {
		err = k.restart(r.Context())
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, nil)
}

// decode reads a JSON body into v; an empty body leaves v as it is.
func decode(r *http.Request, v any) error {
	err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBodyBytes)).Decode(v)
	if err != nil && !errors.Is(err, io.EOF) {
		return errors.Join(errBadRequest, err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in text, as the E2B server does (the SDK turns a 404
// body into NotFoundError).
func writeError(w http.ResponseWriter, err error) {
	http.Error(w, err.Error(), statusOf(err))
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, errBadRequest), errors.Is(err, errUnsupported):
		return http.StatusBadRequest
	case errors.Is(err, errNotFound), errors.Is(err, errContextClosed):
		return http.StatusNotFound
	case errors.Is(err, errDriverStart), errors.Is(err, errServerClosed):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}
