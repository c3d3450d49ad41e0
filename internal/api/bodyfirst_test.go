package api_test

import (
	"net/http"
	"testing"
)

// TestBodyBeforeLookup: an invalid body is 400 before the sandbox id is
// looked up, as E2B's handlers (fork, snapshots, connect, timeout, ...)
// parse and validate the body first; a valid body on a missing id is 404.
func TestBodyBeforeLookup(t *testing.T) {
	srv, _ := newServer(t)
	const missing = "/sandboxes/aaaaaaaaaaaaaaaaaaaa"
	for _, c := range []struct{ path, body string }{
		{"/fork", `{"count":0}`},
		{"/fork", `{"count":17}`},
		{"/fork", `{"timeout":-1}`},
		{"/snapshots", `{"name":"Not A Name!"}`},
		{"/snapshots", `{"name":`},
		{"/timeout", `{"timeout":"x"}`},
		{"/connect", `{"timeout":-5}`},
		{"/connect", `{"timeout":99999999}`},
		{"/resume", `{"timeout":`},
		{"/refreshes", `[]`},
		{"/pause", `[1]`},
		{"/network", `{"allowOut":`},
	} {
		method := http.MethodPost
		if c.path == "/network" {
			method = http.MethodPut
		}
		path := missing + c.path
		if c.path == "/connect" {
			path = "/v2" + path
		}
		code, body := do(t, srv, method, path, c.body, nil)
		if code != http.StatusBadRequest || body["code"] != float64(400) {
			t.Errorf("%s %s %s = %d %v, want 400", method, path, c.body, code, body)
		}
	}
	for _, c := range []struct{ path, body string }{
		{"/fork", `{"count":1}`},
		{"/snapshots", `{"name":"ok"}`},
		{"/timeout", `{}`}, // E2B reads a missing timeout as 0, then looks up
		{"/timeout", `{"timeout":0}`},
		{"/pause", ``},
	} {
		if code, body := do(t, srv, http.MethodPost, missing+c.path, c.body, nil); code != http.StatusNotFound {
			t.Errorf("POST %s %s = %d %v, want 404", missing+c.path, c.body, code, body)
		}
	}
}

// TestCreateResolvesTemplateFirst: a create naming no template is 404 even
// when the rest of its body is invalid too, as E2B's create resolves the
// template (ResolveAlias, templateCache.Get) before it checks the timeout,
// network or volumes. Before, the timeout's 400 came first.
func TestCreateResolvesTemplateFirst(t *testing.T) {
	srv, _ := newServer(t)
	for _, body := range []string{`{"templateID":"nope","timeout":999999}`, `{"templateID":"nope","envVars":{"A=B":"c"}}`,
		`{"templateID":"nope","network":{"allowOut":["not an address"]}}`} {
		if code, e := do(t, srv, "POST", "/v2/sandboxes", body, nil); code != http.StatusNotFound || e["message"] != "template 'nope' not found" {
			t.Errorf("create %s = %d %v, want 404 template 'nope' not found", body, code, e)
		}
	}
	if code, e := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","timeout":999999}`, nil); code != http.StatusBadRequest {
		t.Errorf("create base with a huge timeout = %d %v, want 400", code, e)
	}
}
