package dashboard

import (
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// loginPage is the sign-in form: one password field for the API key.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.current(r); ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "login.html", loginData{Next: safeNext(r.URL.Query().Get("next"))})
}

type loginData struct{ Next, Error string }

// login checks the key as the API does and starts a session: a fresh id
// (any earlier session of this browser ends: no fixation), the key kept
// server-side, an HttpOnly SameSite=Strict cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	key := strings.TrimSpace(r.PostFormValue("key"))
	next := safeNext(r.PostFormValue("next"))
	addr := remoteIP(r)
	if wait := s.limit.wait(addr); wait > 0 {
		secs := int(wait.Round(time.Second).Seconds())
		w.Header().Set(loginRetryHeader, strconv.Itoa(max(secs, 1)))
		s.render(w, http.StatusTooManyRequests, "login.html", loginData{Next: next,
			Error: "Too many failed sign-ins from this address: try again in " + strconv.Itoa(max(secs, 1)) + " s."})
		return
	}
	team, ok := s.cfg.Auth.Authenticate(key)
	if !ok {
		s.limit.failed(addr)
		s.render(w, http.StatusUnauthorized, "login.html", loginData{Next: next, Error: "That API key is not valid."})
		return
	}
	if c, err := r.Cookie(cookieName); err == nil {
		s.sess.remove(c.Value)
	}
	id, _ := s.sess.create(key, team)
	http.SetCookie(w, s.cookie(r, id, int(s.cfg.TTL.Seconds())))
	s.cfg.Log.Info("dashboard sign-in", "team", team, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session and clears the cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.sess.remove(c.Value)
	}
	http.SetCookie(w, s.cookie(r, "", -1))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: cookieName, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// safeNext is where to go after sign-in: a dashboard path, never another
// site ("//evil", "/\evil").
func safeNext(p string) string {
	if !strings.HasPrefix(p, Prefix+"/") || strings.ContainsAny(p, "\\\r\n") || strings.Contains(p, "//") ||
		strings.HasPrefix(p, Prefix+"/login") {
		return Prefix + "/sandboxes"
	}
	return p
}

// app serves the single-page app's shell; the CSRF token is in a meta tag
// for the script (no inline script).
func (s *Server) app(w http.ResponseWriter, r *http.Request) {
	sess := sessionOf(r)
	s.render(w, http.StatusOK, "index.html", appData{CSRF: sess.csrf, Team: sess.team})
}

type appData struct{ CSRF, Team string }

var pages = template.Must(template.ParseFS(assets, "assets/login.html", "assets/index.html"))

func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		s.cfg.Log.Warn("dashboard page", "page", name, "err", err)
	}
}
