package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeAdmin is a daemon with the /sbx/teams and /api-keys routes: one team
// "t1" owning a volume and one key "k1"; every other id is 404.
func fakeAdmin(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var forks atomic.Int32
	mux := http.NewServeMux()
	notFound := func(w http.ResponseWriter, what string) {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": 404, "message": what + " not found"})
	}
	mux.HandleFunc("GET /sbx/teams", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`[{"teamID":"t1","name":"acme","createdAt":"2026-01-02T03:04:05Z","keys":2,"owns":{"sandboxes":0,"volumes":1,"templates":2}}]`))
	})
	mux.HandleFunc("GET /api-keys", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`[{"id":"k1","name":"ci","mask":{"prefix":"e2b_","maskedValueSuffix":"abcd"},"createdAt":"2026-01-02T03:04:05Z","lastUsed":null}]`))
	})
	for _, route := range []string{"DELETE /sbx/teams/{id}", "DELETE /api-keys/{id}"} {
		mux.HandleFunc(route, func(w http.ResponseWriter, r *http.Request) {
			if id := r.PathValue("id"); id != "t1" && id != "k1" {
				notFound(w, id)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
	}
	mux.HandleFunc("POST /sandboxes/{id}/fork", func(w http.ResponseWriter, r *http.Request) {
		forks.Add(1)
		notFound(w, "sandbox "+r.PathValue("id"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &forks
}

// TestTeamsKeysCLI: the listings take --json (as every listing does) and
// show what a team owns; rm prints what it removed and names a missing id
// "no such team"/"no such API key" (not "sandbox not found").
func TestTeamsKeysCLI(t *testing.T) {
	srv, _ := fakeAdmin(t)
	tests := []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{[]string{"teams", "ls"}, 0, "2 templates, 1 volumes", ""},
		{[]string{"teams", "ls", "--json"}, 0, `"teamID": "t1"`, ""},
		{[]string{"keys", "ls", "--json"}, 0, `"id": "k1"`, ""},
		{[]string{"teams", "rm", "t1", "nope"}, 1, "t1\n", "sbx teams rm: nope: no such team\n"},
		{[]string{"keys", "rm", "nope", "k1"}, 1, "k1\n", "sbx keys rm: nope: no such API key\n"},
	}
	for _, tt := range tests {
		code, out, errOut := runAt(t, srv.URL, testKey, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) || errOut != tt.errOut {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, out, errOut, tt.code, tt.out, tt.errOut)
		}
	}
}

// TestKeysLsNone: an empty listing says why on stderr (the admin key a
// daemon prints is not a stored key, so it lists none), not a bare header.
func TestKeysLsNone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`[]`))
	}))
	t.Cleanup(srv.Close)
	code, out, errOut := runAt(t, srv.URL, testKey, "keys", "ls")
	if code != 0 || out != "" || !strings.Contains(errOut, "admin key is not a stored key") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestForkErrors: -n outside 1-16 is bad usage, caught before any request;
// a missing sandbox is "no such sandbox", as for every other command.
func TestForkErrors(t *testing.T) {
	srv, forks := fakeAdmin(t)
	for _, n := range []string{"0", "17"} {
		if code, _, errOut := runAt(t, srv.URL, testKey, "fork", "-n", n, "x"); code != exitUsage || !strings.Contains(errOut, "1 to 16") {
			t.Errorf("-n %s: exit %d, stderr %q", n, code, errOut)
		}
	}
	if forks.Load() != 0 {
		t.Errorf("%d fork requests sent for a bad -n", forks.Load())
	}
	if code, _, errOut := runAt(t, srv.URL, testKey, "fork", "nope"); code != 1 || errOut != "sbx fork: nope: no such sandbox\n" {
		t.Errorf("missing: exit %d, stderr %q", code, errOut)
	}
}
