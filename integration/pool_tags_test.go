package integration

import (
	"testing"
	"time"
)

// TestWarmPoolPerTag: with --pool it-pool-tags=1,it-pool-tags@v2=1 (two
// pools of one template, each of another tag's build), every create of
// either tag is served by its own tag's pool and runs its tag's build.
// Before, a create took the first pool of the template's id in map order:
// half the time the other tag's, which it missed on the build (a cold
// start, the claim counted a miss).
func TestWarmPoolPerTag(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "", "--pool", "it-pool-tags=1,it-pool-tags@v2=1")
	build := func(tags []string, tag string) {
		t.Helper()
		var req struct{ TemplateID, BuildID string }
		if code := d.api("POST", "/v3/templates", map[string]any{"name": "it-pool-tags", "tags": tags}, &req); code != 202 {
			t.Fatalf("request build %v: %d", tags, code)
		}
		spec := map[string]any{"fromTemplate": "base", "steps": []map[string]any{{"type": "ENV", "args": []string{"TAG", tag}}}}
		if code := d.api("POST", "/v2/templates/"+req.TemplateID+"/builds/"+req.BuildID, spec, nil); code != 202 {
			t.Fatalf("start build %v: %d", tags, code)
		}
		st := d.waitStatus(t, req.TemplateID, req.BuildID, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
		if st.Status != "ready" {
			t.Fatalf("build %v: %+v", tags, st)
		}
	}
	build([]string{"v2"}, "v2") // tagged latest too, until the next build
	build(nil, "latest")
	full := func() { t.Helper(); d.waitPool(t, 2) }
	// the latest pool may hold a sandbox of the first build (latest then):
	// RunPools replaces it within its 2 s check
	full()
	time.Sleep(2500 * time.Millisecond)
	for i, ref := range []string{"it-pool-tags:v2", "it-pool-tags", "it-pool-tags:v2", "it-pool-tags:latest", "it-pool-tags:v2", "it-pool-tags:v2"} {
		full()
		hits := poolHits(t, d)
		sb := d.create(map[string]any{"templateID": ref})
		want := map[bool]string{true: "v2\n", false: "latest\n"}[ref == "it-pool-tags:v2"]
		if out, _ := sb.run("", "echo $TAG", 20*time.Second); out != want {
			t.Fatalf("create %d of %s runs TAG=%q, want %q", i, ref, out, want)
		}
		if n := poolHits(t, d) - hits; n != 1 {
			t.Errorf("create %d of %s with both pools full: %d pool hits, want 1 (its own tag's pool)", i, ref, n)
		}
		d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil)
	}
}
