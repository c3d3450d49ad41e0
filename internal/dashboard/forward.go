package dashboard

import (
	"net/http"
	"net/url"
	"path"
	"strings"
)

// forward sends /dashboard/api/<path> to the REST API as /<path>, with the
// session's key as X-API-Key, so the API's auth, ownership gate, quotas and
// audit decide exactly as for the key's own calls. Only Content-Type and
// Accept go through: no cookie, and no routing header that could turn the
// call into sandbox traffic.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), Prefix+"/api")
	u, err := url.ParseRequestURI(rest)
	if err != nil || rest == "" || echoesKey(u.Path) {
		writeError(w, http.StatusNotFound, "no such endpoint")
		return
	}
	u.RawQuery = r.URL.RawQuery
	out := r.Clone(r.Context())
	out.URL, out.RequestURI = u, ""
	out.Header = http.Header{}
	for _, k := range []string{"Content-Type", "Accept"} {
		if v := r.Header.Get(k); v != "" {
			out.Header.Set(k, v)
		}
	}
	out.Header.Set("X-API-Key", sessionOf(r).key)
	s.cfg.API.ServeHTTP(w, out)
}

// echoesKey reports whether the API answers p with the caller's own key
// (E2B's GET /teams): through the forward that would be the session's key,
// which must never reach the browser (a session ends at sign-out or after
// 12 h; the key it would reveal does not).
func echoesKey(p string) bool {
	return path.Clean("/"+p) == "/teams"
}
