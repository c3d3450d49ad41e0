package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/builder"
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
	if tags := tagsOf(t, srv, "mine"); len(tags) != 4 || !tags["latest"] || tags["late1"] {
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
