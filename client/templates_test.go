package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sbx-dev/sbx/client"
)

// fakeAPI answers "METHOD /path" with a canned status and body and
// records what it got.
type fakeAPI struct {
	mu     sync.Mutex
	routes map[string]route
	got    []gotReq
}

type route struct {
	status int
	body   string
}

type gotReq struct {
	method, uri, body string
	header            http.Header
}

func newFakeAPI(t *testing.T, routes map[string]route) (*fakeAPI, *httptest.Server) {
	f := &fakeAPI{routes: routes}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.got = append(f.got, gotReq{r.Method, r.URL.RequestURI(), string(body), r.Header.Clone()})
	f.mu.Unlock()
	rt, ok := f.routes[r.Method+" "+r.URL.EscapedPath()]
	if !ok {
		rt = route{404, `{"code":404,"message":"no route"}`}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rt.status)
	io.WriteString(w, rt.body)
}

func (f *fakeAPI) last(t *testing.T) gotReq {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) == 0 {
		t.Fatal("no request")
	}
	return f.got[len(f.got)-1]
}

func TestTemplateBuildFlow(t *testing.T) {
	f, srv := newFakeAPI(t, map[string]route{
		"POST /v3/templates":              {202, `{"templateID":"t1","buildID":"b1","names":["app"],"tags":["v1"],"aliases":["app"],"public":false}`},
		"GET /templates/t1/files/h%2F1":   {200, `{"present":false,"url":"/upload/t1/h1?sig=x","headers":{"X-Sig":"s","Content-Length":"1"}}`},
		"PUT /upload/t1/h1":               {201, ``},
		"POST /v2/templates/t1/builds/b1": {202, ``},
		"GET /templates/t1/builds/b1/status": {200, `{"templateID":"t1","buildID":"b1","status":"error",
			"logEntries":[{"timestamp":"2026-01-02T03:04:05Z","level":"info","message":"step 1","step":"1"}],"logs":["step 1"],
			"reason":{"message":"RUN failed","step":"2"}}`},
	})
	c := client.New(srv.URL, "key", client.WithUserAgent("sbx-test"))
	ctx := context.Background()

	b, err := c.RequestTemplateBuild(ctx, client.TemplateBuildRequest{Name: "app", Tags: []string{"v1"}, CPUCount: 2})
	must(t, err)
	if b.TemplateID != "t1" || b.BuildID != "b1" || b.Names[0] != "app" {
		t.Errorf("build %+v", b)
	}
	if got := f.last(t).body; got != `{"name":"app","tags":["v1"],"cpuCount":2}` {
		t.Errorf("request body %s", got)
	}

	u, err := c.TemplateFileUpload(ctx, "t1", "h/1")
	must(t, err)
	must(t, c.UploadTemplateFiles(ctx, u, strings.NewReader("tar"), 3))
	put := f.last(t)
	if put.method != "PUT" || put.uri != "/upload/t1/h1?sig=x" || put.body != "tar" ||
		put.header.Get("X-Sig") != "s" || put.header.Get("X-Api-Key") != "key" {
		t.Errorf("upload %+v", put)
	}

	spec := client.TemplateSpec{FromImage: "debian", Steps: []client.TemplateStep{{Type: "COPY", Args: []string{"a", "/a", "", ""}, FilesHash: "h"}}}
	must(t, c.StartTemplateBuild(ctx, "t1", "b1", spec))
	want := `{"fromImage":"debian","force":false,"steps":[{"type":"COPY","args":["a","/a","",""],"filesHash":"h","force":false}]}`
	if got := f.last(t).body; got != want {
		t.Errorf("start body\n got %s\nwant %s", got, want)
	}

	st, err := c.TemplateBuildStatus(ctx, "t1", "b1", 7)
	must(t, err)
	if f.last(t).uri != "/templates/t1/builds/b1/status?logsOffset=7" {
		t.Errorf("status uri %s", f.last(t).uri)
	}
	if !st.Done() || st.Reason == nil || st.Reason.Message != "RUN failed" || st.LogEntries[0].Step != "1" {
		t.Errorf("status %+v", st)
	}
}

// TestUploadForeignHost checks that the API key is not sent to another
// origin (a presigned URL).
func TestUploadForeignHost(t *testing.T) {
	other, osrv := newFakeAPI(t, map[string]route{"PUT /b": {200, ``}})
	_, srv := newFakeAPI(t, nil)
	c := client.New(srv.URL, "key")
	must(t, c.UploadTemplateFiles(context.Background(), &client.FileUpload{URL: osrv.URL + "/b"}, strings.NewReader("x"), 1))
	if k := other.last(t).header.Get("X-Api-Key"); k != "" {
		t.Errorf("API key %q sent to a foreign origin", k)
	}
}

func TestTemplateManagement(t *testing.T) {
	f, srv := newFakeAPI(t, map[string]route{
		"GET /templates": {200, `[{"templateID":"t1","buildID":"b1","names":["app"],"aliases":["app"],"public":false,
			"buildStatus":"ready","cpuCount":2,"memoryMB":512,"diskSizeMB":1024,"envdVersion":"0.6.4",
			"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z","lastSpawnedAt":null,"spawnCount":0,"buildCount":1}]`},
		"GET /templates/t1": {200, `{"templateID":"t1","names":["app"],"aliases":["app"],"public":false,
			"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z","lastSpawnedAt":null,"spawnCount":3,
			"builds":[{"buildID":"b1","status":"ready","createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z","cpuCount":2,"memoryMB":512}]}`},
		"DELETE /templates/t1":       {204, ``},
		"GET /templates/aliases/app": {200, `{"templateID":"t1","public":false}`},
		"DELETE /templates/busy":     {409, `{"code":409,"message":"template in use"}`},
	})
	c := client.New(srv.URL, "key")
	ctx := context.Background()
	ts, err := c.ListTemplates(ctx)
	must(t, err)
	if len(ts) != 1 || ts[0].BuildCount != 1 || ts[0].LastSpawnedAt != nil || ts[0].EnvdVersion != "0.6.4" {
		t.Errorf("list %+v", ts)
	}
	d, err := c.GetTemplate(ctx, "t1")
	must(t, err)
	if diff := cmp.Diff([]string{"b1"}, []string{d.Builds[0].BuildID}); diff != "" || d.SpawnCount != 3 {
		t.Errorf("detail %+v", d)
	}
	must(t, c.DeleteTemplate(ctx, "t1"))
	if r := f.last(t); r.method != "DELETE" || r.uri != "/templates/t1" {
		t.Errorf("delete %+v", r)
	}
	a, err := c.TemplateByAlias(ctx, "app")
	must(t, err)
	if a.TemplateID != "t1" {
		t.Errorf("alias %+v", a)
	}
	if _, err := c.TemplateByAlias(ctx, "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("unknown alias: %v, want ErrNotFound", err)
	}
	var ae *client.APIError
	if err := c.DeleteTemplate(ctx, "busy"); !errors.As(err, &ae) || ae.Message != "template in use" || !errors.Is(err, client.ErrConflict) {
		t.Errorf("delete busy: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
