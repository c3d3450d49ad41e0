package dashboard

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestLoginLimit: an address that failed loginFailures sign-ins in a window
// is refused every sign-in (429, Retry-After), a right key included, until
// the window ends; another address is not affected.
func TestLoginLimit(t *testing.T) {
	s, _, _ := newTestServer(t)
	now := time.Unix(1_800_000_000, 0)
	s.limit.now = func() time.Time { return now }
	post := func(remote, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", origin+"/dashboard/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", origin)
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	for i := 0; i < loginFailures; i++ {
		if w := post("198.51.100.7:4000", "guess"); w.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i, w.Code)
		}
	}
	for _, tc := range []struct {
		name, remote, key string
		after             time.Duration
		want              int
	}{
		{"a guess past the limit", "198.51.100.7:4001", "guess", 0, http.StatusTooManyRequests},
		{"a right key from the blocked address", "198.51.100.7:4002", "key-a", 10 * time.Second, http.StatusTooManyRequests},
		{"another address", "198.51.100.8:4000", "key-a", 10 * time.Second, http.StatusSeeOther},
		{"the blocked address after the window", "198.51.100.7:4003", "key-a", loginWindow, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now = time.Unix(1_800_000_000, 0).Add(tc.after)
			w := post(tc.remote, tc.key)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if tc.want == http.StatusTooManyRequests && (w.Header().Get("Retry-After") == "" || len(w.Result().Cookies()) != 0) {
				t.Fatalf("refusal: Retry-After %q, cookies %v", w.Header().Get("Retry-After"), w.Result().Cookies())
			}
		})
	}
}
