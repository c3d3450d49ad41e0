package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// fakeAPI stands for api.Server: keys map to teams, sandboxes belong to
// teams, and a sandbox of another team answers exactly as an unknown one.
type fakeAPI struct {
	keys  map[string]string // key → team
	boxes map[string]string // sandbox id → team
	last  *http.Request     // the last request the API saw
}

func (f *fakeAPI) Authenticate(key string) (string, bool) {
	t, ok := f.keys[key]
	return t, ok
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.last = r
	team, ok := f.keys[r.Header.Get("X-API-Key")]
	if !ok {
		writeError(w, http.StatusUnauthorized, "invalid or missing X-API-Key")
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/sandboxes/")
	id, _, _ = strings.Cut(id, "/")
	if owner, ok := f.boxes[id]; !ok || owner != team {
		writeError(w, http.StatusNotFound, "sandbox \""+id+"\" not found")
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"sandboxID":"`+id+`"}`)
}

// Conn refuses what the API would: an unknown key or another team's box.
func (f *fakeAPI) Conn(_ context.Context, key, id string) (*client.SandboxConn, error) {
	if team, ok := f.keys[key]; !ok || f.boxes[id] != team {
		return nil, &client.APIError{Status: 404, Code: 404, Message: "sandbox \"" + id + "\" not found"}
	}
	return nil, &client.APIError{Status: 409, Code: 409, Message: "no traffic in unit tests"}
}

const origin = "http://dash.test"

func newTestServer(t *testing.T) (*Server, *fakeAPI, *time.Time) {
	t.Helper()
	f := &fakeAPI{keys: map[string]string{"key-a": "team-a", "key-b": "team-b"},
		boxes: map[string]string{"boxa": "team-a", "boxb": "team-b"}}
	s := New(Config{API: f, Auth: f, Sandboxes: f, TTL: time.Hour, Idle: 10 * time.Minute})
	now := time.Unix(1_800_000_000, 0)
	s.sess.now = func() time.Time { return now }
	return s, f, &now
}

// signIn posts the form and returns the session cookie and CSRF token.
func signIn(t *testing.T, s *Server, key string) (*http.Cookie, string) {
	t.Helper()
	r := httptest.NewRequest("POST", origin+"/dashboard/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", origin)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", w.Code, w.Body)
	}
	cs := w.Result().Cookies()
	if len(cs) != 1 || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || cs[0].Path != "/dashboard" {
		t.Fatalf("session cookie: %+v", cs)
	}
	r = httptest.NewRequest("GET", origin+"/dashboard/sandboxes", nil)
	r.AddCookie(cs[0])
	w = httptest.NewRecorder()
	s.ServeHTTP(w, r)
	_, after, _ := strings.Cut(w.Body.String(), `name="csrf-token" content="`)
	token, _, _ := strings.Cut(after, `"`)
	if w.Code != 200 || len(token) < 40 {
		t.Fatalf("app page: %d, token %q", w.Code, token)
	}
	return cs[0], token
}

func TestGate(t *testing.T) {
	s, _, now := newTestServer(t)
	expired, tokE := signIn(t, s, "key-a")
	*now = now.Add(11 * time.Minute) // past its idle time
	cookA, tokA := signIn(t, s, "key-a")
	cookB, _ := signIn(t, s, "key-b")
	forged := &http.Cookie{Name: cookieName, Value: randomToken()}

	type req struct {
		method, path string
		cookie       *http.Cookie
		csrf, origin string
		sfs          string // Sec-Fetch-Site
	}
	cases := []struct {
		name string
		req  req
		want int
		loc  string // for redirects
	}{
		{"page without cookie → sign-in", req{"GET", "/dashboard/sandboxes/boxa", nil, "", "", ""}, 303, "/dashboard/login?next=%2Fdashboard%2Fsandboxes%2Fboxa"},
		{"page with forged cookie → sign-in", req{"GET", "/dashboard/sandboxes", forged, "", "", ""}, 303, "/dashboard/login?next=%2Fdashboard%2Fsandboxes"},
		{"page with expired session → sign-in", req{"GET", "/dashboard/sandboxes", expired, "", "", ""}, 303, "/dashboard/login?next=%2Fdashboard%2Fsandboxes"},
		{"page signed in", req{"GET", "/dashboard/templates", cookA, "", "", ""}, 200, ""},
		{"api read without cookie", req{"GET", "/dashboard/api/sandboxes/boxa", nil, "", "", ""}, 401, ""},
		{"api read expired session", req{"GET", "/dashboard/api/sandboxes/boxa", expired, "", "", ""}, 401, ""},
		{"api read own sandbox", req{"GET", "/dashboard/api/sandboxes/boxa", cookA, "", "", ""}, 200, ""},
		{"api read other team's sandbox", req{"GET", "/dashboard/api/sandboxes/boxb", cookA, "", "", ""}, 404, ""},
		{"api read unknown sandbox", req{"GET", "/dashboard/api/sandboxes/nope", cookA, "", "", ""}, 404, ""},
		{"kill own, token and origin", req{"DELETE", "/dashboard/api/sandboxes/boxa", cookA, tokA, origin, "same-origin"}, 200, ""},
		{"kill other team's, token and origin", req{"DELETE", "/dashboard/api/sandboxes/boxb", cookA, tokA, origin, ""}, 404, ""},
		{"kill without cookie", req{"DELETE", "/dashboard/api/sandboxes/boxa", nil, tokA, origin, ""}, 401, ""},
		{"kill with expired session and its token", req{"DELETE", "/dashboard/api/sandboxes/boxa", expired, tokE, origin, ""}, 401, ""},
		{"kill without CSRF token", req{"DELETE", "/dashboard/api/sandboxes/boxa", cookA, "", origin, ""}, 403, ""},
		{"kill with a wrong CSRF token", req{"DELETE", "/dashboard/api/sandboxes/boxa", cookA, "x" + tokA[1:], origin, ""}, 403, ""},
		{"kill with another session's token", req{"DELETE", "/dashboard/api/sandboxes/boxa", cookB, tokA, origin, ""}, 403, ""},
		{"kill cross-origin", req{"DELETE", "/dashboard/api/sandboxes/boxa", cookA, tokA, "http://evil.test", ""}, 403, ""},
		{"kill from a sandbox's own host (same site, other origin)", req{"DELETE", "/dashboard/api/sandboxes/boxa", cookA, tokA, "http://8080-boxb.dash.test", "same-site"}, 403, ""},
		{"pause with Origin null", req{"POST", "/dashboard/api/sandboxes/boxa/pause", cookA, tokA, "null", ""}, 403, ""},
		{"kill without Origin", req{"DELETE", "/dashboard/api/sandboxes/boxa", cookA, tokA, "", ""}, 403, ""},
		{"kill cross-site fetch metadata", req{"DELETE", "/dashboard/api/sandboxes/boxa", cookA, tokA, origin, "cross-site"}, 403, ""},
		{"upload without CSRF token", req{"POST", "/dashboard/files/boxa/upload?path=/tmp/x", cookA, "", origin, ""}, 403, ""},
		{"upload to other team's sandbox", req{"POST", "/dashboard/files/boxb/upload?path=/tmp/x", cookA, tokA, origin, ""}, 404, ""},
		{"files of other team's sandbox", req{"GET", "/dashboard/files/boxb?path=/", cookA, "", "", ""}, 404, ""},
		{"download without cookie", req{"GET", "/dashboard/files/boxa/download?path=/etc/hosts", nil, "", "", ""}, 401, ""},
		{"terminal without cookie", req{"GET", "/dashboard/term/boxa", nil, "", origin, ""}, 401, ""},
		{"terminal cross-origin", req{"GET", "/dashboard/term/boxa", cookA, "", "http://evil.test", ""}, 403, ""},
		{"terminal of other team's sandbox", req{"GET", "/dashboard/term/boxb", cookA, "", origin, ""}, 404, ""},
		{"sign-out without CSRF token", req{"POST", "/dashboard/logout", cookA, "", origin, ""}, 403, ""},
		{"sign-in cross-origin", req{"POST", "/dashboard/login", nil, "", "http://evil.test", ""}, 403, ""},
		{"static assets need no session", req{"GET", "/dashboard/static/app.js", nil, "", "", ""}, 200, ""},
		{"page templates are not served raw", req{"GET", "/dashboard/static/index.html", cookA, "", "", ""}, 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.req.method, origin+c.req.path, nil)
			if c.req.cookie != nil {
				r.AddCookie(c.req.cookie)
			}
			for k, v := range map[string]string{csrfHeader: c.req.csrf, "Origin": c.req.origin, "Sec-Fetch-Site": c.req.sfs} {
				if v != "" {
					r.Header.Set(k, v)
				}
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("status %d, want %d: %s", w.Code, c.want, w.Body)
			}
			if c.loc != "" && w.Header().Get("Location") != c.loc {
				t.Fatalf("Location %q, want %q", w.Header().Get("Location"), c.loc)
			}
			if w.Header().Get("Content-Security-Policy") != csp || w.Header().Get("X-Frame-Options") != "DENY" {
				t.Fatalf("security headers missing: %v", w.Header())
			}
		})
	}
}

// TestOtherTeamLooksUnknown: another team's sandbox id answers exactly as
// an id that never existed, through every dashboard path.
func TestOtherTeamLooksUnknown(t *testing.T) {
	s, f, _ := newTestServer(t)
	f.boxes["boxc"] = "team-c"
	cook, tok := signIn(t, s, "key-a")
	for _, p := range []string{"/dashboard/api/sandboxes/%s", "/dashboard/files/%s?path=/", "/dashboard/files/%s/download?path=/x", "/dashboard/term/%s"} {
		var bodies []string
		for _, id := range []string{"boxb", "boxz"} { // another team's, unknown
			r := httptest.NewRequest("GET", origin+strings.Replace(p, "%s", id, 1), nil)
			r.AddCookie(cook)
			r.Header.Set("Origin", origin)
			r.Header.Set(csrfHeader, tok)
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != 404 {
				t.Fatalf("%s %s: %d", p, id, w.Code)
			}
			bodies = append(bodies, strings.ReplaceAll(w.Body.String(), id, "ID"))
		}
		if bodies[0] != bodies[1] {
			t.Fatalf("%s: other team %q vs unknown %q", p, bodies[0], bodies[1])
		}
	}
}

// TestForwardStripsBrowserHeaders: the API sees the session's key and
// nothing of the browser's credentials or routing headers.
func TestForwardStripsBrowserHeaders(t *testing.T) {
	s, f, _ := newTestServer(t)
	cook, _ := signIn(t, s, "key-a")
	r := httptest.NewRequest("GET", origin+"/dashboard/api/sandboxes/boxa?x=1", nil)
	r.AddCookie(cook)
	r.Header.Set("X-API-Key", "key-b")
	r.Header.Set("E2b-Sandbox-Id", "boxb")
	r.Header.Set("Accept", "application/json")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("status %d %s", w.Code, w.Body)
	}
	h := f.last.Header
	if h.Get("X-API-Key") != "key-a" || h.Get("Cookie") != "" || h.Get("E2b-Sandbox-Id") != "" || h.Get("Accept") != "application/json" {
		t.Fatalf("forwarded headers: %v", h)
	}
	if f.last.URL.Path != "/sandboxes/boxa" || f.last.URL.RawQuery != "x=1" {
		t.Fatalf("forwarded URL %v", f.last.URL)
	}
}

// TestSessionLifecycle: wrong keys get no session, sign-out and revocation
// end one on the server, and the absolute lifetime holds however busy.
func TestSessionLifecycle(t *testing.T) {
	s, f, now := newTestServer(t)
	get := func(c *http.Cookie) int {
		r := httptest.NewRequest("GET", origin+"/dashboard/api/sandboxes/boxa", nil)
		r.AddCookie(c)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	r := httptest.NewRequest("POST", origin+"/dashboard/login", strings.NewReader("key=wrong"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", origin)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 401 || len(w.Result().Cookies()) != 0 {
		t.Fatalf("wrong key: %d %v", w.Code, w.Result().Cookies())
	}

	cook, tok := signIn(t, s, "key-a")
	r = httptest.NewRequest("POST", origin+"/dashboard/logout", nil)
	r.AddCookie(cook)
	r.Header.Set("Origin", origin)
	r.Header.Set(csrfHeader, tok)
	w = httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 204 || w.Result().Cookies()[0].MaxAge >= 0 {
		t.Fatalf("sign-out: %d %v", w.Code, w.Result().Cookies())
	}
	if got := get(cook); got != 401 {
		t.Fatalf("replayed cookie after sign-out: %d", got)
	}

	cook, _ = signIn(t, s, "key-a")
	delete(f.keys, "key-a") // revoked
	if got := get(cook); got != 401 {
		t.Fatalf("session of a revoked key: %d", got)
	}

	f.keys["key-a"] = "team-a"
	cook, _ = signIn(t, s, "key-a")
	for i := 0; i < 7; i++ { // used every 9 min: idle never hits, the 1 h TTL does
		*now = now.Add(9 * time.Minute)
		if got, want := get(cook), map[bool]int{true: 200, false: 401}[i < 6]; got != want {
			t.Fatalf("after %d min: %d, want %d", 9*(i+1), got, want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/dashboard/sandboxes/abc": "/dashboard/sandboxes/abc",
		"//evil.test/x":            "/dashboard/sandboxes",
		"/dashboard//evil.test":    "/dashboard/sandboxes",
		"/dashboard/\\evil":        "/dashboard/sandboxes",
		"https://evil.test":        "/dashboard/sandboxes",
		"/dashboard/login":         "/dashboard/sandboxes",
		"":                         "/dashboard/sandboxes",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLoginPageEscapes: a hostile next= is text in the form, not markup.
func TestLoginPageEscapes(t *testing.T) {
	s, _, _ := newTestServer(t)
	r := httptest.NewRequest("GET", origin+"/dashboard/login?next="+url.QueryEscape(`/dashboard/x"><script>alert(1)</script>`), nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if strings.Contains(w.Body.String(), "<script>") {
		t.Fatalf("unescaped: %s", w.Body)
	}
}
