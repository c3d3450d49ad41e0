package api_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// TestTagRulesAsE2B: POST and DELETE /templates/tags take tags as E2B's API
// does (id.ValidateAndDeduplicateTags): trimmed, lowercased, each once. A
// DELETE is refused with 400 before the name is looked up when it names no
// tag, an invalid one, or the default tag (`latest` here: removing it would
// leave `create(name)` nothing to resolve), and when its name carries a tag.
// Before, a DELETE of `latest` went through and the template's bare name no
// longer resolved; `mine:v1` as the name dropped the tag silently; `Prod` was
// refused and ["a","a"] answered twice.
func TestTagRulesAsE2B(t *testing.T) {
	srv := newTemplateServer(t)
	tid, bid := requestBuild(t, srv, "mine")
	if code, e := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bid, `{"fromTemplate":"base"}`, nil); code != 202 {
		t.Fatalf("start = %d %v", code, e)
	}
	if st := waitBuild(t, srv, tid, bid); st["status"] != "ready" {
		t.Fatalf("status %v", st)
	}
	code, r := do(t, srv, "POST", "/templates/tags", `{"target":"mine","tags":["Prod"," prod ","stable","stable"]}`, nil)
	if got := fmt.Sprint(r["tags"]); code != 201 || got != "[prod stable]" {
		t.Fatalf("assign = %d %v, want 201 with [prod stable]", code, r)
	}
	for _, body := range []string{
		`{"name":"mine","tags":["latest"]}`,
		`{"name":"mine","tags":["LATEST"]}`,
		`{"name":"mine","tags":["prod","latest"]}`,
		`{"name":"mine:prod","tags":["prod"]}`,
		`{"name":"mine","tags":[]}`,
		`{"name":"mine"}`,
		`{"name":"mine","tags":["a b"]}`,
		`{"name":"no-such-template","tags":["latest"]}`,
	} {
		if code, e := do(t, srv, "DELETE", "/templates/tags", body, nil); code != 400 || e["code"] != float64(400) {
			t.Errorf("remove %s = %d %v, want 400", body, code, e)
		}
	}
	if tags := tagsOf(t, srv, "mine"); !tags["default"] || !tags["prod"] || !tags["stable"] {
		t.Fatalf("a refused remove took tags: %v", tags)
	}
	if code, e := do(t, srv, "DELETE", "/templates/tags", `{"name":"mine","tags":[" PROD "]}`, nil); code != 204 {
		t.Fatalf("remove PROD = %d %v", code, e)
	}
	if got := slices.Sorted(maps.Keys(tagsOf(t, srv, "mine"))); fmt.Sprint(got) != "[default stable]" {
		t.Fatalf("tags after removing PROD: %v", got)
	}
	// The default tag reads as E2B's "default" (getTags above); an assign
	// answers the tags as given, E2B's "default" and sbx's "latest" alike.
	code, r = do(t, srv, "POST", "/templates/tags", `{"target":"mine","tags":["Default","latest","v2"]}`, nil)
	if got := fmt.Sprint(r["tags"]); code != 201 || got != "[default latest v2]" {
		t.Fatalf("assign default = %d %v, want 201 with [default latest v2]", code, r)
	}
	if code, e := do(t, srv, "DELETE", "/templates/tags", `{"name":"no-such-template","tags":["x"]}`, nil); code != 404 {
		t.Fatalf("remove of a missing template = %d %v, want 404", code, e)
	}
}
