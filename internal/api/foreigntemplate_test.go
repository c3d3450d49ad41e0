package api_test

import (
	"net/http"
	"net/url"
	"testing"
)

// TestForeignTemplateAsE2B: another team's template as E2B's API shows it.
// A public one's tags are every team's to read (E2B's
// TestGetTemplateTagsPublicTemplateAsForeignTeam; before, 404). A private
// one's are 404 exactly as a template nobody holds (E2B says 403; sbx
// tells less). A private one named by id or namespace/name as a build's
// fromTemplate fails the build at its base step with E2B's "you have no
// access to use '<ref>' as a base template" (setTemplateSource: E2B resolves
// those refs across teams, then refuses), where before it read "base
// template '<ref>' not found"; a bare name, which resolves in the caller's
// team only, and a ref naming nothing still read "not found".
func TestForeignTemplateAsE2B(t *testing.T) {
	srv, as := teamServer(t)
	tidA := buildAs(t, srv, as("team_a"), "my-app")
	buildAs(t, srv, as("team_b"), "mine")
	tags := func(ref string) (int, []map[string]any) {
		return doList(t, srv, "/templates/"+url.PathEscape(ref)+"/tags", as("team_b"))
	}
	for _, ref := range []string{"team_a/my-app", tidA} {
		c1, r1 := tags(ref)
		c2, r2 := tags("team_a/nothing")
		if c1 != http.StatusNotFound || c2 != http.StatusNotFound {
			t.Errorf("team_b's tags of private %s = %d %v, of none %d %v; want 404 both", ref, c1, r1, c2, r2)
		}
	}
	base := func(ref string) any {
		t.Helper()
		code, r := do(t, srv, "POST", "/v3/templates", `{"name":"child"}`, as("team_b"))
		if code != 202 {
			t.Fatalf("request = %d %v", code, r)
		}
		tid, bid := r["templateID"].(string), r["buildID"].(string)
		if code, e := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bid, `{"fromTemplate":"`+ref+`"}`, as("team_b")); code != 202 {
			t.Fatalf("start from %s = %d %v", ref, code, e)
		}
		st := waitBuildAs(t, srv, tid, bid, as("team_b"))
		reason, _ := st["reason"].(map[string]any)
		if st["status"] != "error" || reason["step"] != "base" {
			t.Fatalf("build from %s: %v", ref, st)
		}
		return reason["message"]
	}
	for ref, want := range map[string]string{
		"team_a/my-app":        "you have no access to use 'team_a/my-app' as a base template",
		tidA:                   "you have no access to use '" + tidA + "' as a base template",
		tidA + ":latest":       "you have no access to use '" + tidA + ":latest' as a base template",
		"my-app":               "base template 'my-app' not found",
		"team_a/nothing":       "base template 'team_a/nothing' not found",
		"nosuchnamespace/mine": "base template 'nosuchnamespace/mine' not found",
	} {
		if got := base(ref); got != want {
			t.Errorf("build from %s: %q, want %q", ref, got, want)
		}
	}
	if code, r := do(t, srv, "PATCH", "/templates/my-app", `{"public":true}`, as("team_a")); code != 200 {
		t.Fatalf("publish = %d %v", code, r)
	}
	for _, ref := range []string{"team_a/my-app", tidA} {
		code, r := tags(ref)
		if code != 200 || len(r) != 1 || r[0]["tag"] != "default" {
			t.Errorf("team_b's tags of public %s = %d %v, want 200 and default", ref, code, r)
		}
	}
}
