// Package dashboard serves the web dashboard at /dashboard: sign-in with an
// API key into a server-side session (HttpOnly, SameSite=Strict cookie),
// the single-page app and its assets (embedded; nothing from a CDN), and
// the endpoints the app calls. Every call acts with the session's key, so
// the API's own auth, ownership gate (another team's ids answer 404) and
// audit apply unchanged; state-changing requests also need the session's
// CSRF token and a same-origin Origin.
package dashboard

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/dashboard"

// Authenticator resolves an API key (api.Server.Authenticate).
type Authenticator interface {
	Authenticate(key string) (team string, ok bool)
}

// Connector opens a sandbox's traffic side (commands, files) with an API
// key: a sandbox the key's team does not own is client.ErrNotFound.
type Connector interface {
	Conn(ctx context.Context, key, id string) (*client.SandboxConn, error)
}

// Config is what the dashboard is built on.
type Config struct {
	API       http.Handler // the REST API (api.Server); called with X-API-Key set
	Auth      Authenticator
	Sandboxes Connector
	Log       *slog.Logger
	// TTL bounds a session's life, Idle its time unused; defaults 12 h, 30 min.
	TTL, Idle time.Duration
}

// Server is the dashboard's handler.
type Server struct {
	cfg   Config
	sess  *sessions
	limit *loginLimiter
	mux   *http.ServeMux
}

// New returns the dashboard handler.
func New(cfg Config) *Server {
	if cfg.TTL <= 0 {
		cfg.TTL = 12 * time.Hour
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 30 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Server{cfg: cfg, sess: newSessions(cfg.TTL, cfg.Idle), limit: newLoginLimiter(), mux: http.NewServeMux()}
	s.routes()
	return s
}

// Match reports whether r is for the dashboard.
func Match(r *http.Request) bool {
	return r.URL.Path == Prefix || strings.HasPrefix(r.URL.Path, Prefix+"/")
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /dashboard", redirect(Prefix+"/sandboxes"))
	m.HandleFunc("GET /dashboard/{$}", redirect(Prefix+"/sandboxes"))
	m.HandleFunc("GET /dashboard/login", s.loginPage)
	m.HandleFunc("POST /dashboard/login", s.sameOrigin(s.login))
	m.Handle("GET /dashboard/static/", staticHandler())
	m.Handle("POST /dashboard/logout", s.mutating(s.logout))
	for _, p := range []string{"/sandboxes", "/sandboxes/{id}", "/templates", "/templates/{id}", "/audit", "/health"} {
		m.Handle("GET "+Prefix+p, s.page(s.app))
	}
	m.Handle(Prefix+"/api/", s.apiGate(http.HandlerFunc(s.forward)))
	m.Handle("GET /dashboard/files/{id}", s.reading(s.listFiles))
	m.Handle("GET /dashboard/files/{id}/download", s.reading(s.download))
	m.Handle("POST /dashboard/files/{id}/upload", s.mutating(s.upload))
	m.Handle("GET /dashboard/term/{id}", s.reading(s.terminal))
	m.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such page: "+r.Method+" "+r.URL.Path)
	})
}

// ServeHTTP sets the security headers of every dashboard response, then
// routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: that makes a same-origin POST's Origin "null"
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	s.mux.ServeHTTP(w, r)
}

// csp allows scripts, styles, connections, images and fonts from the
// daemon's own origin only: no inline or eval'd script, no inline style
// (xterm.js's run-time <style> elements go into constructable stylesheets,
// app.js adoptStyles), no frames, no plugins, forms post only here.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func redirect(to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusSeeOther) }
}
