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
	"github.com/sbx-dev/sbx/internal/ratelimit"
	"github.com/sbx-dev/sbx/internal/reqid"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/secrets"
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
	obs      Observer         // SetObservability; nil: none
	metricsH http.Handler     // GET /metrics; nil: 404
	debug    DebugSource      // GET /sbx/debug/*; nil: 404
	tenants  *Tenants         // SetTenants; nil: only the admin keys (default team)
	secrets  *secrets.Manager // SetSecrets; nil: no secret routes, rules cannot name secrets
	// disk admits template uploads and volume creates against the teams'
	// disk quotas one at a time (diskadmit.go).
	disk diskLedger
	// teamLim limits team keys' requests (SetTeamRate; nil: unlimited),
	// unauthLim unauthenticated ones per remote address (ratelimit.go).
	teamLim, unauthLim *ratelimit.Limiter
	// patterns lists every route registered behind auth and others lists
	// the rest (Routes).
	patterns, others []string
	// BodyTimeout bounds reading a request's body and WriteTimeout writing
	// its response (slow clients); New sets the defaults.
	BodyTimeout, WriteTimeout time.Duration
}

// New returns the API handler. keys authenticates X-API-Key; audit (may be
// nil) receives one record per authenticated call.
func New(mgr *sandbox.Manager, keys *Keys, audit Auditor, log *slog.Logger) *Server {
	s := &Server{mgr: mgr, keys: keys, log: log, mux: http.NewServeMux(), audit: audit,
		unauthLim:   ratelimit.New(unauthRate, unauthBurst),
		BodyTimeout: 30 * time.Second, WriteTimeout: 5 * time.Minute}
	s.routes()
	return s
}

// handle registers an authenticated route: the principal is resolved and
// the path's record ids pass the ownership gate (owner.go) before fn runs.
func (s *Server) handle(pattern string, fn http.HandlerFunc) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, s.auth(fn))
}

// handleOther registers a route that does not take an API key (health, a
// signed upload link, a volume's bearer token).
func (s *Server) handleOther(pattern string, h http.Handler) {
	s.others = append(s.others, pattern)
	s.mux.Handle(pattern, h)
}

// Routes lists the patterns of every route registered so far: those behind
// an API key (and the ownership gate) and the others. GET /sbx/routes
// serves it to admin keys; the integration tests walk it so that a new
// route cannot skip the ownership checks unnoticed.
func (s *Server) Routes() (apiKey, other []string) {
	return append([]string(nil), s.patterns...), append([]string(nil), s.others...)
}

func (s *Server) listRoutes(w http.ResponseWriter, r *http.Request) {
	if !principalOf(r).Admin {
		WriteError(w, http.StatusForbidden, "this endpoint needs an admin key")
		return
	}
	a, o := s.Routes()
	writeJSON(w, http.StatusOK, map[string][]string{"apiKey": a, "other": o})
}

func (s *Server) routes() {
	h := s.handle
	s.handleOther("GET /health", http.HandlerFunc(s.health))
	h("GET /sbx/routes", s.listRoutes)
	h("POST /v2/sandboxes", s.create)
	h("POST /sandboxes", s.create)
	h("GET /v2/sandboxes", s.list)
	h("GET /sandboxes", s.listV1)
	h("GET /sandboxes/{id}", s.get)
	h("DELETE /sandboxes/{id}", s.kill)
	s.handleChecked("POST /sandboxes/{id}/timeout", shapeOf[timeoutReq](), s.setTimeout)
	s.handleChecked("POST /sandboxes/{id}/refreshes", shapeOf[refreshReq](), s.refresh)
	s.handleChecked("POST /v2/sandboxes/{id}/connect", checkTimeoutBody, s.connect)
	s.handleChecked("POST /sandboxes/{id}/connect", checkTimeoutBody, s.connect)
	h("GET /sandboxes/{id}/metrics", s.metrics)
	h("GET /sandboxes/metrics", s.bulkMetrics)
	h("GET /teams", s.teams)
	h("GET /teams/{teamID}/metrics", s.teamMetrics)
	h("GET /teams/{teamID}/metrics/max", s.teamMetricsMax)
	s.handleChecked("POST /sandboxes/{id}/pause", shapeOf[pauseReq](), s.pause)
	s.handleChecked("POST /sandboxes/{id}/resume", shapeOf[resumeReq](), s.resume)
	s.handleChecked("POST /sandboxes/{id}/fork", checkForkBody, s.fork)
	s.handleChecked("POST /sandboxes/{id}/snapshots", checkSnapshotBody, s.snapshot)
	h("GET /snapshots", s.snapshots)
	h("DELETE /templates/{template}", s.deleteTemplate)
	h("GET /sbx/storage", s.storage)
	h("GET /sbx/version", s.version)
	s.handleChecked("PUT /sandboxes/{id}/network", shapeOf[networkUpdate](), s.updateNetwork)
	h("GET /sandboxes/{id}/logs", s.logsV1)
	h("GET /v2/sandboxes/{id}/logs", s.logsV2)
	h("GET /templates", s.templates)
	h("GET /metrics", s.admin(s.metricsEndpoint)) // operator-only: node-wide figures
	h("GET /sbx/debug/config", s.admin(s.debugConfig))
	h("GET /sbx/debug/logs", s.admin(s.debugLogs))
	h("GET /sbx/audit", s.admin(s.debugAudit))
	s.mux.HandleFunc("/", s.noRoute)
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

// auth turns the X-API-Key into a principal (or answers 401), puts it on
// the request, runs the ownership gate, and audits the call (key id and
// team, never the key).
func (s *Server) auth(next http.HandlerFunc) http.Handler {
	return s.authChecked(nil, next)
}

// authChecked is auth with check (if any) run on the body between the key
// and the ownership gate (bodyfirst.go).
func (s *Server) authChecked(check bodyCheck, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.gate(w, r, r.Header.Get("X-API-Key"))
		if !ok {
			return
		}
		r = withPrincipal(r, p)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		if (check == nil || check(s, sw, r)) && s.owns(sw, r) {
			next(sw, r)
		}
		s.record(r, p.KeyID, sw.status)
	})
}

// principal resolves an API key: an admin key (SBX_API_KEY or the
// generated one) is the default team with admin rights; a team key is its
// team. Every comparison is constant-time or keyed by the key's hash.
func (s *Server) principal(key string) (Principal, bool) {
	if s.keys.Valid(key) {
		return Principal{Admin: true, KeyID: KeyID(key)}, true
	}
	return s.tenants.lookup(key)
}

func (s *Server) record(r *http.Request, actor string, status int) {
	if s.audit == nil {
		return
	}
	id := r.PathValue("id")
	if !sandbox.ValidID(id) {
		id = ""
	}
	f := map[string]string{
		"method": r.Method, "path": truncate(r.URL.Path, 256), "status": strconv.Itoa(status), "remote": r.RemoteAddr,
		"request_id": reqid.From(r.Context()),
	}
	if actor != "" {
		f["team"] = principalOf(r).TeamID()
	}
	_ = s.audit.Append("api", id, actor, f)
}

// statusWriter remembers the status written, and the cause of a 500
// (writeErr), which is logged and not answered.
type statusWriter struct {
	http.ResponseWriter
	status int
	cause  error
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
