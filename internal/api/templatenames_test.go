package api_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/store"
)

// teamServer is newTemplateAPI with teams team_a and team_b; as(team) is
// the header of team's key ("" the admin key: the default team).
func teamServer(t *testing.T) (*httptest.Server, func(team string) map[string]string) {
	t.Helper()
	return teamServerAt(t, t.TempDir())
}

// teamServerAt is teamServer with its data in dir.
func teamServerAt(t *testing.T, dir string) (*httptest.Server, func(team string) map[string]string) {
	t.Helper()
	a, st := newTemplateAPIAt(t, dir)
	// Both teams have one name (stored as before names were unique): a
	// name is not a namespace.
	for _, id := range []string{"team_a", "team_b"} {
		if err := st.PutTeam(t.Context(), &store.Team{ID: id, Name: "same name"}); err != nil {
			t.Fatal(err)
		}
	}
	tn, err := api.LoadTenants(t.Context(), st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{"": testKey}
	for _, id := range []string{"team_a", "team_b"} {
		if keys[id], _, err = tn.CreateKey(t.Context(), id, "k", ""); err != nil {
			t.Fatal(err)
		}
	}
	a.SetTenants(tn)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv, func(team string) map[string]string { return map[string]string{"X-API-Key": keys[team]} }
}

// buildAs requests and runs a build of name for team; it returns the
// template id.
func buildAs(t *testing.T, srv *httptest.Server, hdr map[string]string, name string) string {
	t.Helper()
	code, r := do(t, srv, "POST", "/v3/templates", `{"name":"`+name+`"}`, hdr)
	if code != 202 {
		t.Fatalf("request %s = %d %v", name, code, r)
	}
	tid, bid := r["templateID"].(string), r["buildID"].(string)
	if code, e := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bid, `{"fromTemplate":"base"}`, hdr); code != 202 {
		t.Fatalf("start %s = %d %v", name, code, e)
	}
	for range 200 {
		code, st := do(t, srv, "GET", "/templates/"+tid+"/builds/"+bid+"/status", "", hdr)
		if code != 200 || st["status"] == "error" {
			t.Fatalf("status = %d %v", code, st)
		}
		if st["status"] == "ready" {
			return tid
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("build did not finish")
	return ""
}

// TestTemplateNamesPerTeam: template names are scoped to the team, as
// E2B's. The default team, team_a and team_b each build "my-app" and each
// reaches its own by the bare name (create, alias, get, tags, builds);
// another team's is reachable only as "<namespace>/my-app" (the namespace
// is the team id, GET /teams' slug) and only once public, and before that
// is answered exactly as a name that does not exist; public gives use,
// never change (a public template's tags are every team's to read, as
// E2B's, TestForeignTemplateAsE2B). Built-in names stay reserved for every team. Before, the
// second team's build of "my-app" was 409 "name taken".
func TestTemplateNamesPerTeam(t *testing.T) {
	srv, as := teamServer(t)
	ids := map[string]string{}
	for _, team := range []string{"", "team_a", "team_b"} {
		ids[team] = buildAs(t, srv, as(team), "my-app")
	}
	if ids[""] == ids["team_a"] || ids["team_a"] == ids["team_b"] || ids[""] == ids["team_b"] {
		t.Fatalf("one template for two teams: %v", ids)
	}
	for team, id := range ids {
		hdr := as(team)
		if code, r := do(t, srv, "GET", "/templates/aliases/my-app", "", hdr); code != 200 || r["templateID"] != id {
			t.Errorf("%q: alias my-app = %d %v, want %s", team, code, r, id)
		}
		if code, r := do(t, srv, "GET", "/templates/my-app", "", hdr); code != 200 || r["templateID"] != id {
			t.Errorf("%q: get my-app = %d %v, want %s", team, code, r, id)
		}
		if code, r := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"my-app:latest"}`, hdr); code != 201 || r["templateID"] != id {
			t.Errorf("%q: create my-app = %d %v, want template %s", team, code, r, id)
		}
		if code, r := do(t, srv, "POST", "/templates/tags", `{"target":"my-app","tags":["v1"]}`, hdr); code != 201 {
			t.Errorf("%q: tag my-app = %d %v", team, code, r)
		}
		if code, r := do(t, srv, "POST", "/v3/templates", `{"name":"base"}`, hdr); code != 409 {
			t.Errorf("%q: build under a built-in's name = %d %v, want 409", team, code, r)
		}
	}
	for team, slug := range map[string]string{"": "00000000-0000-4000-8000-00000000e2b0", "team_a": "team_a"} {
		if code, r := doList(t, srv, "/teams", as(team)); code != 200 || len(r) != 1 || r[0]["slug"] != slug {
			t.Fatalf("%q: teams = %d %v, want slug %s", team, code, r, slug)
		}
	}
	hidden := func(what string) {
		t.Helper()
		for _, ref := range []string{"team_a/my-app", "team_a/nothing"} {
			code, r := do(t, srv, "GET", "/templates/aliases/"+url.PathEscape(ref), "", as("team_b")) // as the SDK sends it
			code2, r2 := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"`+ref+`"}`, as("team_b"))
			if code != 404 || code2 != 404 || r["message"] != `template '`+ref+`' not found` || r2["message"] != r["message"] {
				t.Errorf("%s: team_b's %s = %d %v, create %d %v; want 404 as for no template", what, ref, code, r, code2, r2)
			}
		}
	}
	hidden("private")
	if code, r := do(t, srv, "PATCH", "/templates/my-app", `{"public":true}`, as("team_a")); code != 200 {
		t.Fatalf("publish = %d %v", code, r)
	}
	if code, r := do(t, srv, "GET", "/templates/aliases/team_a%2Fmy-app", "", as("team_b")); code != 200 || r["templateID"] != ids["team_a"] || r["public"] != true {
		t.Errorf("team_b's alias team_a/my-app = %d %v", code, r)
	}
	names := map[string]string{}
	if code, ls := doList(t, srv, "/templates", as("team_b")); code == 200 {
		for _, in := range ls {
			names[in["templateID"].(string)] = fmt.Sprint(in["names"], in["aliases"])
		}
	}
	if names[ids["team_a"]] != "[team_a/my-app] [team_a/my-app]" || names[ids["team_b"]] != "[my-app] [my-app]" || names["base"] != "[base] [base]" || names[ids[""]] != "" {
		t.Errorf("team_b's list: %v", names)
	}
	if code, r := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"team_a/my-app"}`, as("team_b")); code != 201 || r["templateID"] != ids["team_a"] {
		t.Errorf("team_b creates team_a/my-app = %d %v", code, r)
	}
	if code, r := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"my-app"}`, as("team_b")); code != 201 || r["templateID"] != ids["team_b"] {
		t.Errorf("team_b's bare my-app after team_a published = %d %v, want its own", code, r)
	}
	for _, req := range [][2]string{{"DELETE", "/templates/team_a%2Fmy-app"}, {"PATCH", "/templates/team_a%2Fmy-app"}} {
		if code, r := do(t, srv, req[0], req[1], `{"public":false}`, as("team_b")); code != 404 {
			t.Errorf("team_b %s %s = %d %v, want 404", req[0], req[1], code, r)
		}
	}
	if code, r := do(t, srv, "PATCH", "/templates/my-app", `{"public":false}`, as("team_a")); code != 200 {
		t.Fatalf("unpublish = %d %v", code, r)
	}
	hidden("private again")
	if code, r := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"00000000-0000-4000-8000-00000000e2b0/my-app"}`, as("team_a")); code != 404 {
		t.Errorf("team_a creates the default team's private my-app by namespace = %d %v", code, r)
	}
	if code, r := do(t, srv, "DELETE", "/templates/my-app", "", as("team_b")); code != 204 {
		t.Errorf("team_b deletes its my-app = %d %v", code, r)
	}
	if code, r := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"my-app"}`, as("team_b")); code != 404 {
		t.Errorf("team_b without a my-app creates my-app = %d %v, want 404 (neither the default team's nor team_a's)", code, r)
	}
	for _, team := range []string{"", "team_a"} {
		if code, r := do(t, srv, "GET", "/templates/aliases/my-app", "", as(team)); code != 200 || r["templateID"] != ids[team] {
			t.Errorf("%q's my-app after team_b deleted its own = %d %v", team, code, r)
		}
	}
}

// doList is do for an answer that is a JSON array.
func doList(t *testing.T, srv *httptest.Server, path string, hdr map[string]string) (int, []map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
