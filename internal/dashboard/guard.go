package dashboard

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
)

// cookieName is the session cookie: HttpOnly, SameSite=Strict, Path
// /dashboard, Secure on HTTPS.
const cookieName = "sbx_dashboard"

// csrfHeader carries the session's CSRF token on state-changing requests.
const csrfHeader = "X-CSRF-Token"

type sessionKey struct{}

// sessionOf is the session the gate put on r's context.
func sessionOf(r *http.Request) session {
	s, _ := r.Context().Value(sessionKey{}).(session)
	return s
}

// current returns r's live session, if any, and marks it used.
func (s *Server) current(r *http.Request) (session, bool) { return s.session(r, true) }

// session returns r's live session, if any: one whose key the API still
// accepts (a revoked key ends it). use marks it used (its idle time
// starts again).
func (s *Server) session(r *http.Request, use bool) (session, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return session{}, false
	}
	sess, ok := s.sess.lookup(c.Value, use)
	if ok {
		if _, valid := s.cfg.Auth.Authenticate(sess.key); !valid { // revoked since sign-in
			s.sess.remove(c.Value)
			return session{}, false
		}
	}
	return sess, ok
}

// page serves a view to a signed-in browser; others are sent to sign in.
func (s *Server) page(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.current(r)
		if !ok {
			http.Redirect(w, r, Prefix+"/login?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
	})
}

// reading gates a request that changes nothing: a session is needed (401).
func (s *Server) reading(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.current(r)
		if !ok {
			writeError(w, http.StatusUnauthorized, "not signed in")
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
	})
}

// mutating gates a state-changing request: a session (401), an Origin of
// the dashboard's own origin (403) and the session's CSRF token in
// X-CSRF-Token (403).
func (s *Server) mutating(next http.HandlerFunc) http.Handler {
	return s.reading(func(w http.ResponseWriter, r *http.Request) {
		if msg := crossOrigin(r); msg != "" {
			writeError(w, http.StatusForbidden, msg)
			return
		}
		if !validCSRF(sessionOf(r), r.Header.Get(csrfHeader)) {
			writeError(w, http.StatusForbidden, "missing or wrong "+csrfHeader)
			return
		}
		next(w, r)
	})
}

// apiGate is reading for GET and HEAD, mutating for every other method.
func (s *Server) apiGate(next http.Handler) http.Handler {
	rd, mu := s.reading(next.ServeHTTP), s.mutating(next.ServeHTTP)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			rd.ServeHTTP(w, r)
			return
		}
		mu.ServeHTTP(w, r)
	})
}

// sameOrigin refuses a request whose Origin is not the dashboard's own
// (sign-in: no session yet, so no CSRF token).
func (s *Server) sameOrigin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if msg := crossOrigin(r); msg != "" {
			writeError(w, http.StatusForbidden, msg)
			return
		}
		next(w, r)
	}
}

// crossOrigin explains why r is not a same-origin browser request, or is
// "". Browsers send Origin on every POST, PUT, PATCH, DELETE and WebSocket
// handshake (Referrer-Policy same-origin keeps it from being "null"), and
// Sec-Fetch-Site where they support it.
func crossOrigin(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return "missing Origin header"
	}
	if origin != selfOrigin(r) {
		return "cross-origin request refused"
	}
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" {
		return "cross-site request refused"
	}
	return ""
}

// selfOrigin is the origin r was sent to.
func selfOrigin(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

func validCSRF(sess session, token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(sess.csrf)) == 1
}

// writeError answers the API's {code, message} shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": status, "message": msg})
}
