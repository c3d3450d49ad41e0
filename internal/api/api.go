// Package api serves the E2B lifecycle REST API (contract §2) on top of
// sandbox.Manager: it decodes and validates requests, calls the manager, and
// maps errors to statuses in one place (errors.go).
package api

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/reqid"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/telemetry"
	"github.com/sbx-dev/sbx/internal/volume"
)

// Auditor records API calls (implemented by *audit.Log).
type Auditor interface {
	Append(kind, sandbox, actor string, fields map[string]string) error
}

// Server is the REST API handler.
type Server struct {
	mgr   *sandbox.Manager
	keys  *Keys
	log   *slog.Logger
	mux   *http.ServeMux
	audit Auditor // may be nil
	// builds serves the template build API (SetBuilder); uploadKey signs
	// its upload links.
	builds    *builder.Service
	uploadKey []byte
	vols      *volume.Manager // SetVolumes; nil: no volume routes answer but 404
	// tel holds sandboxes' metrics and logs (SetTelemetry); may be nil.
	tel      *telemetry.Store
	obs      Observer     // SetObservability; nil: none
	metricsH http.Handler // GET /metrics; nil: 404
	debug    DebugSource  // GET /sbx/debug/*; nil: 404
	// BodyTimeout bounds reading a request's body and WriteTimeout writing
	// its response (slow clients); New sets the defaults.
	BodyTimeout, WriteTimeout time.Duration
}

// New returns the API handler. keys authenticates X-API-Key; audit (may be
// nil) receives one record per authenticated call.
func New(mgr *sandbox.Manager, keys *Keys, audit Auditor, log *slog.Logger) *Server {
	s := &Server{mgr: mgr, keys: keys, log: log, mux: http.NewServeMux(), audit: audit,
		BodyTimeout: 30 * time.Second, WriteTimeout: 5 * time.Minute}
	s.routes()
	return s
}

func (s *Server) routes() {
	h := func(pattern string, fn http.HandlerFunc) { s.mux.Handle(pattern, s.auth(fn)) }
	s.mux.HandleFunc("GET /health", s.health)
	h("POST /v2/sandboxes", s.create)
	h("POST /sandboxes", s.create)
	h("GET /v2/sandboxes", s.list)
	h("GET /sandboxes", s.listV1)
	h("GET /sandboxes/{id}", s.get)
	h("DELETE /sandboxes/{id}", s.kill)
	h("POST /sandboxes/{id}/timeout", s.setTimeout)
	h("POST /sandboxes/{id}/refreshes", s.refresh)
	h("POST /v2/sandboxes/{id}/connect", s.connect)
	h("POST /sandboxes/{id}/connect", s.connect)
	h("GET /sandboxes/{id}/metrics", s.metrics)
	h("GET /sandboxes/metrics", s.bulkMetrics)
	h("GET /teams", s.teams)
	h("GET /teams/{teamID}/metrics", s.teamMetrics)
	h("GET /teams/{teamID}/metrics/max", s.teamMetricsMax)
	h("POST /sandboxes/{id}/pause", s.pause)
	h("POST /sandboxes/{id}/resume", s.resume)
	h("POST /sandboxes/{id}/fork", s.fork)
	h("POST /sandboxes/{id}/snapshots", s.snapshot)
	h("GET /snapshots", s.snapshots)
	h("DELETE /templates/{template}", s.deleteTemplate)
	h("GET /sbx/storage", s.storage)
	h("GET /sbx/version", s.version)
	h("PUT /sandboxes/{id}/network", s.updateNetwork)
	h("GET /sandboxes/{id}/logs", s.logsV1)
	h("GET /v2/sandboxes/{id}/logs", s.logsV2)
	h("GET /templates", s.templates)
	s.mux.Handle("GET /metrics", s.admin(s.metricsEndpoint))
	s.mux.Handle("GET /sbx/debug/config", s.admin(s.debugConfig))
	s.mux.Handle("GET /sbx/debug/logs", s.admin(s.debugLogs))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
}

// ServeHTTP implements http.Handler. API requests are small: a client that
// trickles its body or never reads the answer is cut off (the daemon's
// server has no whole-request timeouts, since sandbox traffic streams). The
// write deadline is cleared afterwards: the connection may carry a long
// sandbox stream next.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.BodyTimeout))
	_ = rc.SetWriteDeadline(time.Now().Add(s.WriteTimeout))
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	s.serveObserved(w, r, s.mux)
}

// auth requires a valid X-API-Key and audits the call (key id, never the key).
func (s *Server) auth(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-API-Key")
		if !s.keys.Valid(key) {
			s.record(r, "", http.StatusUnauthorized)
			WriteError(w, http.StatusUnauthorized, "invalid or missing X-API-Key")
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next(sw, r)
		s.record(r, KeyID(key), sw.status)
	})
}

func (s *Server) record(r *http.Request, actor string, status int) {
	if s.audit == nil {
		return
	}
	id := r.PathValue("id")
	if !sandbox.ValidID(id) {
		id = ""
	}
	_ = s.audit.Append("api", id, actor, map[string]string{
		"method": r.Method, "path": truncate(r.URL.Path, 256), "status": strconv.Itoa(status), "remote": r.RemoteAddr,
		"request_id": reqid.From(r.Context()),
	})
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (flush,
// deadlines, full duplex).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sandboxID returns the {id} path value if it is well formed; otherwise it
// answers 404 (an id that cannot exist is simply not found).
func sandboxID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !sandbox.ValidID(id) {
		WriteError(w, http.StatusNotFound, "sandbox \""+truncate(id, 64)+"\" not found")
		return "", false
	}
	return id, true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
