package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template"
	"github.com/sbx-dev/sbx/internal/template/layers"
	"github.com/sbx-dev/sbx/internal/template/oci"
)

// newTemplateServer serves the API with the template builder over a fake
// host and a built-in template "base" whose tree holds an executable
// /bin/bash (a build from it needs no sandbox when it has no steps).
func newTemplateServer(t *testing.T) *httptest.Server {
	t.Helper()
	a, _ := newTemplateAPI(t)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv
}

// newTemplateAPI is newTemplateServer's handler and its store, for a test
// to add to before it serves.
func newTemplateAPI(t *testing.T) (*api.Server, *store.Store) {
	t.Helper()
	return newTemplateAPIAt(t, t.TempDir())
}

// newTemplateAPIAt is newTemplateAPI with its data (sbx.db, templates) in
// dir.
func newTemplateAPIAt(t *testing.T, dir string) (*api.Server, *store.Store) {
	t.Helper()
	tdir := filepath.Join(dir, "templates")
	ls := &layers.Store{Dir: filepath.Join(tdir, "layers")}
	key := strings.Repeat("ab", 32)
	if _, err := ls.Ensure(t.Context(), key, func(d string) error {
		if err := os.Mkdir(filepath.Join(d, "bin"), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(d, "bin/bash"), []byte("#!"), 0o755)
	}); err != nil {
		t.Fatal(err)
	}
	id, _ := layers.ID(key)
	if err := (&template.Store{Dir: tdir}).Register(&template.Template{Name: "base", Layers: []string{id}, Key: key}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := &builder.Registry{Builtins: &template.Store{Dir: tdir}, Layers: ls, Store: st}
	h := sandboxtest.NewHost()
	cfg := sandbox.Config{DefaultRuntime: "fake", AgentPort: sandboxtest.StartAgent(t), DefaultTimeout: time.Minute, MaxTimeout: time.Hour,
		Defaults: sandbox.Resources{CPUCount: 1, MemoryMB: 256, DiskSizeMB: 256, Pids: 100},
		Max:      sandbox.Resources{CPUCount: 4, MemoryMB: 2048, DiskSizeMB: 2048}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := sandbox.New(cfg, st, sandbox.Runtimes{"fake": sandboxtest.NewRuntime(h)}, h, sandboxtest.NewLayers(h), reg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	b := builder.New(builder.Config{DataDir: dir, TmpDir: filepath.Join(dir, "tmp"), Runtime: "fake", StepTimeout: 10 * time.Second,
		CPUCount: 1, MemoryMB: 256, DiskSizeMB: 256, MaxUploadBytes: 1 << 20}, reg, m, st, &oci.Puller{StallTimeout: time.Second}, log)
	if err := b.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	keys, _, err := api.LoadKeys(t.TempDir(), testKey)
	if err != nil {
		t.Fatal(err)
	}
	a := api.New(m, keys, nil, log)
	a.SetBuilder(b)
	return a, st
}

// waitBuild polls a build's status until it is ready or error.
func waitBuild(t *testing.T, srv *httptest.Server, tid, bid string) map[string]any {
	t.Helper()
	return waitBuildAs(t, srv, tid, bid, nil)
}

// waitBuildAs is waitBuild with the headers hdr (a team's key).
func waitBuildAs(t *testing.T, srv *httptest.Server, tid, bid string, hdr map[string]string) map[string]any {
	t.Helper()
	for range 200 {
		code, st := do(t, srv, "GET", "/templates/"+tid+"/builds/"+bid+"/status", "", hdr)
		if code != 200 {
			t.Fatalf("status = %d %v", code, st)
		}
		if s := st["status"]; s == "ready" || s == "error" {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("build did not finish")
	return nil
}

func requestBuild(t *testing.T, srv *httptest.Server, name string) (string, string) {
	t.Helper()
	code, r := do(t, srv, "POST", "/v3/templates", `{"name":"`+name+`","cpuCount":1,"memoryMB":256}`, nil)
	if code != 202 || r["templateID"] == "" || r["buildID"] == "" {
		t.Fatalf("request build = %d %v", code, r)
	}
	return r["templateID"].(string), r["buildID"].(string)
}

func TestTemplateBuildFromTemplate(t *testing.T) {
	srv := newTemplateServer(t)
	tid, bid := requestBuild(t, srv, "mine:v1")
	if code, e := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bid, `{"fromTemplate":"base","steps":[],"future":"field"}`, nil); code != 202 {
		t.Fatalf("start = %d %v", code, e)
	}
	if code, _ := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bid, `{"fromTemplate":"base"}`, nil); code != 409 {
		t.Fatalf("second start = %d, want 409", code)
	}
	st := waitBuild(t, srv, tid, bid)
	if st["status"] != "ready" || len(st["logEntries"].([]any)) == 0 {
		t.Fatalf("status %v", st)
	}
	for _, ref := range []string{"mine", "mine:v1", "mine:latest", tid} {
		if code, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"`+ref+`","timeout":30}`, nil); code != 201 {
			t.Fatalf("create from %s = %d %v", ref, code, sb)
		}
	}
	// The list's template filter takes the id, the alias or a name:tag.
	for _, ref := range []string{"mine", "mine:v1", tid} {
		if code, ls := doList(t, srv, "/v2/sandboxes?template="+ref, map[string]string{"X-API-Key": testKey}); code != 200 || len(ls) != 4 {
			t.Fatalf("list template=%s = %d, %d sandboxes, want 4", ref, code, len(ls))
		}
	}
	if code, a := do(t, srv, "GET", "/templates/aliases/mine", "", nil); code != 200 || a["templateID"] != tid {
		t.Fatalf("alias = %d %v", code, a)
	}
	if code, a := do(t, srv, "GET", "/templates/aliases/base", "", nil); code != 200 || a["public"] != true {
		t.Fatalf("alias of a built-in = %d %v", code, a)
	}
	if code, tg := do(t, srv, "POST", "/templates/tags", `{"target":"mine:v1","tags":["prod"]}`, nil); code != 201 || tg["buildID"] != bid {
		t.Fatalf("assign tags = %d %v", code, tg)
	}
	if code, _ := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"mine:prod","timeout":30}`, nil); code != 201 {
		t.Fatalf("create from mine:prod = %d", code)
	}
	if code, _ := do(t, srv, "DELETE", "/templates/tags", `{"name":"mine","tags":["prod"]}`, nil); code != 204 {
		t.Fatalf("remove tags = %d", code)
	}
	if code, _ := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"mine:prod","timeout":30}`, nil); code != 404 {
		t.Fatalf("create from a removed tag = %d, want 404", code)
	}
	if code, g := do(t, srv, "GET", "/templates/mine", "", nil); code != 200 || len(g["builds"].([]any)) != 1 ||
		g["spawnCount"] != float64(5) || g["lastSpawnedAt"] == nil {
		t.Fatalf("get = %d %v (5 creates so far)", code, g)
	}
	if code, u := do(t, srv, "PATCH", "/templates/"+tid, `{"public":true}`, nil); code != 200 || u["names"] == nil {
		t.Fatalf("patch = %d %v", code, u)
	}
	// PATCH /v2/templates/{id} is the same update with the names in the
	// answer: `e2b template publish|unpublish` (@e2b/cli 2.x) call it.
	for _, pub := range []string{"false", "true"} {
		code, u := do(t, srv, "PATCH", "/v2/templates/"+tid, `{"public":`+pub+`}`, nil)
		_, g := do(t, srv, "GET", "/templates/"+tid, "", nil)
		if code != 200 || fmt.Sprint(u["names"]) != "[mine]" || fmt.Sprint(g["public"]) != pub {
			t.Fatalf("v2 patch public=%s = %d %v, then public=%v", pub, code, u, g["public"])
		}
	}
	if code, u := do(t, srv, "PATCH", "/v2/templates/base", `{"public":false}`, nil); code != 400 {
		t.Fatalf("v2 patch of a built-in = %d %v, want 400", code, u)
	}
	if code, _ := do(t, srv, "DELETE", "/templates/"+tid, "", nil); code != 204 {
		t.Fatalf("delete = %d", code)
	}
	for _, p := range []string{"/templates/aliases/mine", "/templates/" + tid} {
		if code, _ := do(t, srv, "GET", p, "", nil); code != 404 {
			t.Fatalf("GET %s after delete = %d, want 404", p, code)
		}
	}
	if code, _ := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"mine","timeout":30}`, nil); code != 404 {
		t.Fatalf("create from a deleted template = %d, want 404", code)
	}
}

func TestTemplateBuildErrors(t *testing.T) {
	srv := newTemplateServer(t)
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/v3/templates", `{"name":"Bad Name"}`, 400},
		{"POST", "/v3/templates", `{"name":"` + strings.Repeat("X", 512<<10) + `"}`, 400}, // not echoed back whole
		{"POST", "/v3/templates", `{"name":"base"}`, 409},
		{"POST", "/v3/templates", `{"name":"ok","cpuCount":99}`, 400},
		{"POST", "/v3/templates", `{"name":"ok","tags":["a b"]}`, 400},
		{"POST", "/v3/templates", `not json`, 400},
		{"GET", "/templates/nope/builds/nope/status", "", 404},
		{"POST", "/v2/templates/nope/builds/nope", `{"fromTemplate":"base"}`, 404},
		{"GET", "/templates/aliases/nope", "", 404},
		{"GET", "/templates/nope", "", 404},
		{"DELETE", "/templates/nope", "", 404},
		{"DELETE", "/templates/base", "", 501},
		{"POST", "/templates/tags", `{"target":"nope","tags":["x"]}`, 404},
		{"GET", "/templates/nope/files/" + strings.Repeat("a", 64), "", 404},
	} {
		if code, e := do(t, srv, tc.method, tc.path, tc.body, nil); code != tc.want || e["code"] != float64(tc.want) {
			t.Errorf("%s %s %.100s = %d %.300v, want %d", tc.method, tc.path, tc.body, code, e, tc.want)
		} else if m, _ := e["message"].(string); len(m) > 1024 {
			t.Errorf("%s %s %.100s: a %d-byte message", tc.method, tc.path, tc.body, len(m))
		}
	}
	tid, bid := requestBuild(t, srv, "bad")
	for _, body := range []string{`{}`, `{"fromTemplate":"base","fromImage":"x"}`, `{"fromTemplate":"base","steps":[{"type":"HEALTHCHECK"}]}`,
		`{"fromTemplate":"base","steps":[{"type":"COPY","args":["a","/b"],"filesHash":"../../x"}]}`} {
		if code, e := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bid, body, nil); code != 400 {
			t.Errorf("start %s = %d %v, want 400", body, code, e)
		}
	}
	// an unknown base (as another team's) is taken and fails the build at
	// its base step, as on E2B (the API's setTemplateSource)
	tid2, bid2 := requestBuild(t, srv, "bad2")
	if code, e := do(t, srv, "POST", "/v2/templates/"+tid2+"/builds/"+bid2, `{"fromTemplate":"no-such"}`, nil); code != 202 {
		t.Fatalf("start = %d %v", code, e)
	}
	st2 := waitBuild(t, srv, tid2, bid2)
	if reason, _ := st2["reason"].(map[string]any); st2["status"] != "error" || reason["step"] != "base" || reason["message"] != "base template 'no-such' not found" {
		t.Fatalf("status %v", st2)
	}
	// a base with no ready build (itself) fails the build, with the step named
	if code, _ := do(t, srv, "POST", "/v2/templates/"+tid+"/builds/"+bid, `{"fromTemplate":"bad"}`, nil); code != 202 {
		t.Fatalf("start = %d", code)
	}
	st := waitBuild(t, srv, tid, bid)
	reason, _ := st["reason"].(map[string]any)
	if st["status"] != "error" || reason["step"] != "base" || reason["message"] != "base template 'bad' not found" {
		t.Fatalf("status %v (the reason names the base as the build named it, not by its id)", st)
	}
	if code, _ := do(t, srv, "GET", "/templates/"+tid+"/builds/"+bid+"/status?logsOffset=-1", "", nil); code != 400 {
		t.Errorf("negative logsOffset = %d, want 400", code)
	}
	if code, s := do(t, srv, "GET", "/templates/"+tid+"/builds/"+bid+"/status?level=error", "", nil); code != 200 || len(s["logEntries"].([]any)) != 1 {
		t.Errorf("level=error = %d %v, want only the error entry", code, s)
	}
	if code, _ := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"bad","timeout":30}`, nil); code != 404 {
		t.Errorf("create from a template with no ready build = %d, want 404", code)
	}
}

func TestTemplateUploads(t *testing.T) {
	srv := newTemplateServer(t)
	tid, _ := requestBuild(t, srv, "up")
	hash := strings.Repeat("ab", 32)
	code, link := do(t, srv, "GET", "/templates/"+tid+"/files/"+hash, "", nil)
	if code != 201 || link["present"] != false || link["url"] == "" {
		t.Fatalf("link = %d %v", code, link)
	}
	url := link["url"].(string)
	put := func(u string, body []byte) int {
		req, _ := http.NewRequest("PUT", u, bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := put(strings.Replace(url, "signature=", "signature=0", 1), []byte("x")); c != 403 {
		t.Errorf("tampered signature = %d, want 403", c)
	}
	if c := put(strings.Replace(url, hash, strings.Repeat("cd", 32), 1), []byte("x")); c != 403 {
		t.Errorf("link used for another hash = %d, want 403", c)
	}
	if c := put(url, make([]byte, 2<<20)); c != 413 {
		t.Errorf("upload past the bound = %d, want 413", c)
	}
	if code, l := do(t, srv, "GET", "/templates/"+tid+"/files/"+hash, "", nil); code != 201 || l["present"] != false {
		t.Errorf("a refused upload left files: %v", l)
	}
	if c := put(url, []byte("tar bytes")); c != 201 {
		t.Fatalf("upload = %d", c)
	}
	if code, l := do(t, srv, "GET", "/templates/"+tid+"/files/"+hash, "", nil); code != 201 || l["present"] != true {
		t.Errorf("after upload: %d %v", code, l)
	}
	if code, _ := do(t, srv, "GET", "/templates/"+tid+"/files/not-a-hash", "", nil); code != 400 {
		t.Errorf("bad hash = %d, want 400", code)
	}
	var list []map[string]any
	resp, _ := http.NewRequest("GET", srv.URL+"/templates", nil)
	resp.Header.Set("X-API-Key", testKey)
	r, err := http.DefaultClient.Do(resp)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(&list); err != nil || len(list) != 2 {
		t.Fatalf("list: %v %v", list, err)
	}
}

// Every envd version the daemon reports is the same one.
func TestEnvdVersionsAgree(t *testing.T) {
	if template.EnvdVersion != api.EnvdVersion || builder.EnvdVersion != api.EnvdVersion {
		t.Fatalf("envd versions: template %s, builder %s, api %s", template.EnvdVersion, builder.EnvdVersion, api.EnvdVersion)
	}
}

// Two builds of one name racing: one template, both builds ready, latest is
// one of them, and creates work throughout.
func TestTemplateBuildRace(t *testing.T) {
	srv := newTemplateServer(t)
	type req struct{ tid, bid string }
	var rs []req
	for range 2 {
		tid, bid := requestBuild(t, srv, "racy")
		rs = append(rs, req{tid, bid})
	}
	if rs[0].tid != rs[1].tid || rs[0].bid == rs[1].bid {
		t.Fatalf("builds of one name: %+v", rs)
	}
	for _, r := range rs {
		if code, e := do(t, srv, "POST", "/v2/templates/"+r.tid+"/builds/"+r.bid, `{"fromTemplate":"base"}`, nil); code != 202 {
			t.Fatalf("start = %d %v", code, e)
		}
	}
	for _, r := range rs {
		if st := waitBuild(t, srv, r.tid, r.bid); st["status"] != "ready" {
			t.Fatalf("status %v", st)
		}
	}
	code, g := do(t, srv, "GET", "/templates/racy", "", nil)
	if code != 200 || len(g["builds"].([]any)) != 2 || (g["buildID"] != rs[0].bid && g["buildID"] != rs[1].bid) {
		t.Fatalf("get = %d %v", code, g)
	}
	if code, _ := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"racy","timeout":30}`, nil); code != 201 {
		t.Fatalf("create = %d", code)
	}
}
