package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBuiltinTemplateTags: a built-in template's tags are E2B's answer for
// a public template (200, its one build tagged latest), tagging one through
// the API is refused as deleting one is (501, naming the CLI), and a missing
// template is E2B's 404 "template '<ref>' not found".
func TestBuiltinTemplateTags(t *testing.T) {
	srv := newTemplateServer(t)
	req, _ := http.NewRequest("GET", srv.URL+"/templates/base/tags", nil)
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var tags []map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(b, &tags) != nil || len(tags) != 1 || tags[0]["tag"] != "default" ||
		tags[0]["buildID"] == nil || tags[0]["createdAt"] == nil {
		t.Fatalf("GET /templates/base/tags = %d %s, want 200 and one tag default (E2B's name of the default tag)", resp.StatusCode, b)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/templates/tags", `{"target":"base","tags":["x"]}`},
		{"DELETE", "/templates/tags", `{"name":"base","tags":["x"]}`},
	} {
		if code, e := do(t, srv, c.method, c.path, c.body, nil); code != 501 || !strings.Contains(e["message"].(string), "sbx template build") {
			t.Errorf("%s %s %s = %d %v, want 501 naming the CLI", c.method, c.path, c.body, code, e)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/templates/nonexistent/tags", ""},
		{"GET", "/templates/nonexistent", ""},
		{"DELETE", "/templates/tags", `{"name":"nonexistent","tags":["x"]}`},
		{"POST", "/templates/tags", `{"target":"nonexistent","tags":["x"]}`},
	} {
		if code, e := do(t, srv, c.method, c.path, c.body, nil); code != 404 || e["message"] != "template 'nonexistent' not found" {
			t.Errorf("%s %s %s = %d %v, want 404 template 'nonexistent' not found", c.method, c.path, c.body, code, e)
		}
	}
}

// TestBuiltinTagsAcrossTeams: any team lists a built-in template's tags,
// and a public user template's, as E2B answers a public template's to any
// team; another team's private template stays the same 404 as a missing
// one (docs/SECURITY.md).
func TestBuiltinTagsAcrossTeams(t *testing.T) {
	srv, as := teamServer(t)
	pub := buildAs(t, srv, as("team_a"), "pub")
	priv := buildAs(t, srv, as("team_a"), "priv")
	if code, r := do(t, srv, "PATCH", "/templates/pub", `{"public":true}`, as("team_a")); code != 200 {
		t.Fatalf("publish = %d %v", code, r)
	}
	if code, tags := doList(t, srv, "/templates/base/tags", as("team_b")); code != 200 || len(tags) != 1 || tags[0]["tag"] != "default" {
		t.Errorf("team_b GET /templates/base/tags = %d %v, want 200 and default", code, tags)
	}
	if code, tags := doList(t, srv, "/templates/"+pub+"/tags", as("team_b")); code != 200 || len(tags) != 1 || tags[0]["tag"] != "default" {
		t.Errorf("team_b GET tags of team_a's public %s = %d %v, want 200 and default", pub, code, tags)
	}
	if code, e := do(t, srv, "GET", "/templates/"+priv+"/tags", "", as("team_b")); code != 404 || e["message"] != "template '"+priv+"' not found" {
		t.Errorf("team_b GET tags of team_a's private %s = %d %v, want the missing template's 404", priv, code, e)
	}
	if code, e := do(t, srv, "DELETE", "/templates/tags", `{"name":"base","tags":["x"]}`, as("team_b")); code != 404 {
		t.Errorf("team_b removes a tag of base = %d %v, want 404", code, e)
	}
}
