// Package clienttest is an in-memory sbx daemon for tests of code that uses
// package client: the lifecycle REST API and, routed by the E2b-Sandbox-Id
// and E2b-Sandbox-Port headers, a fake envd (processes, files) per sandbox.
// It checks the same headers the daemon does and records every request.
package clienttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Request is one request the server received.
type Request struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
}

// Sandbox is the server's record of one sandbox.
type Sandbox struct {
	ID, Token, TemplateID, Runtime string
	Metadata, EnvVars              map[string]string
	StartedAt, EndAt               time.Time
	Files                          map[string][]byte // path → contents
	Signals                        []string          // signals sent with SendSignal
}

// Server is a fake sbx daemon. Configure its exported fields before use.
type Server struct {
	URL       string
	APIKey    string
	PageSize  int                                               // list page size (default 100)
	Templates []string                                          // default: base, code-interpreter-v1
	Exec      ExecFunc                                          // how commands run (default Shell)
	Hook      func(w http.ResponseWriter, r *http.Request) bool // if it returns true, the request is handled

	srv       *httptest.Server
	mu        sync.Mutex
	sandboxes []*Sandbox
	reqs      []Request
	procs     map[uint32]*proc
	nextPID   uint32
}

// NewServer starts a server that accepts apiKey; it is closed with t.
func NewServer(t testing.TB, apiKey string) *Server {
	s := &Server{APIKey: apiKey, PageSize: 100, Templates: []string{"base", "code-interpreter-v1"},
		Exec: Shell, procs: map[uint32]*proc{}, nextPID: 100}
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Sandboxes returns the live sandboxes, oldest first.
func (s *Server) Sandboxes() []*Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Sandbox(nil), s.sandboxes...)
}

// Add inserts a sandbox directly (for list and kill tests).
func (s *Server) Add(sb *Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb.Files == nil {
		sb.Files = map[string][]byte{}
	}
	s.sandboxes = append(s.sandboxes, sb)
}

func (s *Server) lookup(id string) *Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sb := range s.sandboxes {
		if sb.ID == id {
			return sb
		}
	}
	return nil
}

// ServeHTTP records r, then routes it to envd (by header) or the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
	s.mu.Unlock()
	if s.Hook != nil && s.Hook(w, r) {
		return
	}
	if r.Header.Get("E2b-Sandbox-Id") != "" || r.Header.Get("E2b-Sandbox-Port") != "" {
		s.envd(w, r)
		return
	}
	s.api(w, r)
}

// WriteError writes E2B's {code, message} error body.
func WriteError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]any{"code": status, "message": fmt.Sprintf(format, args...)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// URL returns the request's URL (path and query).
func (r Request) URL() *url.URL { return &url.URL{Path: r.Path, RawQuery: r.RawQuery} }
