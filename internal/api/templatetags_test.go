package api_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestTemplateTagsBounded: a template holds at most
// builder.MaxTagsPerTemplate tags ("latest" included). An assign past it is
// 429 {code, message} naming the bound (tags it holds already do not count
// again, and a removed tag makes room); a build request with more tags than
// the bound is 400 and one past the room left is 429; a build admitted
// before the template filled up is still ready, with "latest" and without
// the tags past the bound. Before, tags were unbounded: 84,000 in six
// requests grew the daemon from 36 to 184 MB and slowed every team's
// template requests.
func TestTemplateTagsBounded(t *testing.T) {
	defer func(n int) { builder.MaxTagsPerTemplate = n }(builder.MaxTagsPerTemplate)
	builder.MaxTagsPerTemplate = 4
	srv := newTemplateServer(t)
	tid, bid := requestBuild(t, srv, "mine")
	if code, e := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bid, `{"fromTemplate":"base"}`, nil); code != 202 {
		t.Fatalf("start = %d %v", code, e)
	}
	if st := waitBuild(t, srv, tid, bid); st["status"] != "ready" {
		t.Fatalf("status %v", st)
	}
	late := struct{ TemplateID, BuildID string }{}
	if code, r := do(t, srv, "POST", "/v3/templates", `{"name":"mine","tags":["late1","late2"]}`, nil); code != 202 {
		t.Fatalf("request a build with 2 tags at 1 of 4 = %d %v", code, r)
	} else {
		late.TemplateID, late.BuildID = r["templateID"].(string), r["buildID"].(string)
	}
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"target":"mine","tags":["a","b","a"]}`, 201}, // latest, a, b
		{`{"target":"mine","tags":["b","c"]}`, 201},     // b held: 4
		{`{"target":"mine","tags":["d"]}`, 429},
		{`{"target":"mine","tags":["a","c"]}`, 201}, // held already
	} {
		code, e := do(t, srv, "POST", "/templates/tags", tc.body, nil)
		if code != tc.want || (code == 429 && (e["code"] != float64(429) || !strings.Contains(e["message"].(string), "at most 4 tags"))) {
			t.Fatalf("assign %s = %d %v, want %d", tc.body, code, e, tc.want)
		}
	}
	if code, e := do(t, srv, "POST", "/v3/templates", `{"name":"mine","tags":["x"]}`, nil); code != 429 {
		t.Errorf("request a build with a tag at 4 of 4 = %d %v, want 429", code, e)
	}
	if code, e := do(t, srv, "POST", "/v3/templates", `{"name":"other","tags":["1","2","3","4","5"]}`, nil); code != 400 {
		t.Errorf("request a build with 5 tags = %d %v, want 400", code, e)
	}
	if code, _ := do(t, srv, "GET", "/templates/aliases/other", "", nil); code != 404 {
		t.Errorf("the refused request left template other: %d", code)
	}
	if code, e := do(t, srv, "POST", "/v2/templates/"+late.TemplateID+"/builds/"+late.BuildID, `{"fromTemplate":"base"}`, nil); code != 202 {
		t.Fatalf("start the late build = %d %v", code, e)
	}
	if st := waitBuild(t, srv, late.TemplateID, late.BuildID); st["status"] != "ready" {
		t.Fatalf("late build %v", st)
	}
	if tags := tagsOf(t, srv, "mine"); len(tags) != 4 || !tags["default"] || tags["late1"] {
		t.Fatalf("tags after the late build: %v, want latest, a, b, c", tags)
	}
	if code, _ := do(t, srv, "DELETE", "/templates/tags", `{"name":"mine","tags":["a"]}`, nil); code != 204 {
		t.Fatalf("remove a = %d", code)
	}
	if code, e := do(t, srv, "POST", "/templates/tags", `{"target":"mine","tags":["d"]}`, nil); code != 201 {
		t.Fatalf("assign d after removing a = %d %v", code, e)
	}
}

// tagsOf lists template ref's tags.
func tagsOf(t *testing.T, srv *httptest.Server, ref string) map[string]bool {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+"/templates/"+ref+"/tags", nil)
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct{ Tag string }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatalf("tags of %s: %d %v", ref, resp.StatusCode, err)
	}
	out := map[string]bool{}
	for _, e := range list {
		out[e.Tag] = true
	}
	return out
}

// TestTemplatesPerTeamBounded: a team holding its bound of templates is
// refused a new name with 429 {code, message} naming it; a build of a
// template it holds is still admitted, another team is unaffected, and a
// deleted template makes room. Before, template requests were unbounded:
// 2,156 in 40 s made every team's GET /templates 0.22 s.
func TestTemplatesPerTeamBounded(t *testing.T) {
	defer api.SetMaxTemplatesPerTeam(3)()
	a, st := newTemplateAPI(t)
	tn, err := api.LoadTenants(t.Context(), st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, id := range []string{"team_a", "team_b"} {
		if err := tn.PutTeam(t.Context(), &store.Team{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
		if keys[id], _, err = tn.CreateKey(t.Context(), id, "k", ""); err != nil {
			t.Fatal(err)
		}
	}
	a.SetTenants(tn)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	as := func(team string) map[string]string { return map[string]string{"X-API-Key": keys[team]} }
	var first string
	for i, want := range []int{202, 202, 202, 429} {
		code, r := do(t, srv, "POST", "/v3/templates", fmt.Sprintf(`{"name":"a%d"}`, i), as("team_a"))
		if code != want || (code == 429 && (r["code"] != float64(429) || !strings.Contains(r["message"].(string), "at most 3 templates"))) {
			t.Fatalf("team_a's template %d = %d %v, want %d", i, code, r, want)
		}
		if i == 0 {
			first = r["templateID"].(string)
		}
	}
	if code, r := do(t, srv, "POST", "/v3/templates", `{"name":"a0:v2"}`, as("team_a")); code != 202 {
		t.Errorf("a new build of a held template at the bound = %d %v", code, r)
	}
	if code, r := do(t, srv, "POST", "/v3/templates", `{"name":"b0"}`, as("team_b")); code != 202 {
		t.Errorf("another team's template = %d %v", code, r)
	}
	if code, r := do(t, srv, "DELETE", "/templates/"+first, "", as("team_a")); code != 204 {
		t.Fatalf("delete = %d %v", code, r)
	}
	if code, r := do(t, srv, "POST", "/v3/templates", `{"name":"a9"}`, as("team_a")); code != 202 {
		t.Errorf("a template after one was deleted = %d %v", code, r)
	}
}

// TestUnstartedBuildsBounded: a template keeps at most
// builder.MaxUnstartedBuilds build requests never started; past it the
// oldest are dropped (starting one is 404) and the newest start. Before,
// requests were unbounded (313 rows in 20 s for one template).
func TestUnstartedBuildsBounded(t *testing.T) {
	defer func(n int) { builder.MaxUnstartedBuilds = n }(builder.MaxUnstartedBuilds)
	builder.MaxUnstartedBuilds = 3
	srv := newTemplateServer(t)
	var tid string
	var bids []string
	for range 5 {
		id, bid := requestBuild(t, srv, "mine")
		tid, bids = id, append(bids, bid)
	}
	for i, want := range []int{404, 404, 202, 202} {
		if code, e := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bids[i], `{"fromTemplate":"base"}`, nil); code != want {
			t.Errorf("start request %d of 5 = %d %v, want %d", i, code, e, want)
		}
	}
	if st := waitBuild(t, srv, tid, bids[3]); st["status"] != "ready" {
		t.Fatalf("status %v", st)
	}
	// started builds do not count: three more requests drop only request 4
	for range 3 {
		requestBuild(t, srv, "mine")
	}
	if code, e := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bids[4], `{"fromTemplate":"base"}`, nil); code != 404 {
		t.Errorf("start the oldest unstarted request = %d %v, want 404", code, e)
	}
	if code, g := do(t, srv, "GET", "/templates/"+tid+"/builds/"+bids[2]+"/status", "", nil); code != 200 {
		t.Errorf("a started build's status = %d %v", code, g)
	}
}
