package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/sbx-dev/sbx/internal/reqid"
)

// Observer measures API requests (internal/metrics implements it). route
// is the matched pattern ("" when none matched), never a raw path.
type Observer interface {
	APIRequest(route string, code int, d time.Duration)
}

// DebugSource is what the admin debug endpoints serve: the daemon's
// effective configuration (secrets already redacted) and its recent log
// lines (a bounded ring).
type DebugSource interface {
	Config() any
	RecentLogs(n int) []string
	// Audit verifies the node's audit log (hash chain and signed
	// checkpoints) and returns the verdict and its newest n records.
	Audit(n int) (any, error)
}

// SetObservability installs the request observer, the /metrics handler
// (served to admin keys) and the debug source; any may be nil. Call it
// before serving.
func (s *Server) SetObservability(obs Observer, metrics http.Handler, debug DebugSource) {
	s.obs, s.metricsH, s.debug = obs, metrics, debug
}

// serveObserved gives r its request id (the client's X-Request-Id when
// well formed, else a new one), returns it in the response header, and
// after the request logs one line with it and feeds the observer.
func (s *Server) serveObserved(w http.ResponseWriter, r *http.Request, next http.Handler) {
	id := reqid.Pick(r.Header.Get(reqid.Header))
	w.Header().Set(reqid.Header, id)
	ctx := reqid.With(r.Context(), id)
	r, mark := withLimitMark(r.WithContext(ctx))
	ctx = r.Context()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	t0 := time.Now()
	next.ServeHTTP(sw, r)
	d := time.Since(t0)
	if s.obs != nil {
		s.obs.APIRequest(r.Pattern, sw.status, d)
	}
	if mark.set {
		return // refused by the rate limiter: reported once a second instead
	}
	s.logRequest(ctx, r, sw.status, d, sw.cause)
}

// logRequest logs a request: changes and failures at info, reads at debug;
// cause is a 500's error (not in the answer).
func (s *Server) logRequest(ctx context.Context, r *http.Request, status int, d time.Duration, cause error) {
	level := slog.LevelDebug
	if r.Method != http.MethodGet && r.Method != http.MethodHead || status >= 400 {
		level = slog.LevelInfo
	}
	if status >= 500 {
		level = slog.LevelWarn
	}
	if r.URL.Path == "/health" && status < 400 {
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{slog.String("method", r.Method),
		slog.String("path", truncate(r.URL.Path, 256)), slog.Int("status", status),
		slog.Float64("took_ms", float64(d.Microseconds())/1000), slog.String("remote", r.RemoteAddr)}
	if cause != nil {
		attrs = append(attrs, slog.String("err", boundText(cause.Error())))
	}
	s.log.LogAttrs(ctx, level, "api request", attrs...)
}

// metricsEndpoint serves GET /metrics (Prometheus) to admin keys.
func (s *Server) metricsEndpoint(w http.ResponseWriter, r *http.Request) {
	if s.metricsH == nil {
		WriteError(w, http.StatusNotFound, "metrics are not enabled on this node")
		return
	}
	s.metricsH.ServeHTTP(w, r)
}

// debugConfig serves GET /sbx/debug/config: the effective configuration,
// secrets redacted.
func (s *Server) debugConfig(w http.ResponseWriter, _ *http.Request) {
	if s.debug == nil {
		WriteError(w, http.StatusNotFound, "debug information is not enabled on this node")
		return
	}
	writeJSON(w, http.StatusOK, s.debug.Config())
}

// debugLogs serves GET /sbx/debug/logs?lines=N: the newest N (default
// 1000) log lines of the daemon, oldest first, as text.
func (s *Server) debugLogs(w http.ResponseWriter, r *http.Request) {
	if s.debug == nil {
		WriteError(w, http.StatusNotFound, "debug information is not enabled on this node")
		return
	}
	n, set, ok := queryInt(w, r.URL.Query(), "lines", 1, 1<<20)
	if !ok {
		return
	} else if !set {
		n = 1000
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, l := range s.debug.RecentLogs(int(n)) {
		_, _ = w.Write([]byte(l))
	}
}

// debugAudit serves GET /sbx/audit?limit=N (admin): the audit log's
// verification verdict and its newest N records (default 200, at most
// 5000). The log holds every team's records, hence admin only.
func (s *Server) debugAudit(w http.ResponseWriter, r *http.Request) {
	if s.debug == nil {
		WriteError(w, http.StatusNotFound, "debug information is not enabled on this node")
		return
	}
	n, set, ok := queryInt(w, r.URL.Query(), "limit", 1, 5000)
	if !ok {
		return
	} else if !set {
		n = 200
	}
	out, err := s.debug.Audit(int(n))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
