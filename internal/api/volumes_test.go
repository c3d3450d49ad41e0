package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/api"
	"github.com/sbx-dev/sbx/internal/volume"
)

// newVolumeServer is the API over a fake host with real volumes (ext4
// images, so root and mkfs.ext4 are needed).
func newVolumeServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv, _ := newVolumeAPI(t, nil)
	return srv
}

// newVolumeAPI is newVolumeServer auditing into aud (nil: none), with its
// api.Server for further setup before requests.
func newVolumeAPI(t *testing.T, aud *memAudit) (*httptest.Server, *api.Server) {
	t.Helper()
	if _, err := exec.LookPath("mkfs.ext4"); os.Geteuid() != 0 || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("volume API tests need root and mkfs.ext4")
		}
		t.Skip("needs root and mkfs.ext4")
	}
	a, _ := newAPIAudited(t, nil, aud)
	st := openStore(t)
	dir := t.TempDir()
	vm, err := volume.Open(context.Background(), volume.Config{Dir: dir, DefaultSizeMB: 16, MaxSizeMB: 32, TotalMB: 64},
		st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // unmount what a failed test left
		out, _ := exec.Command("findmnt", "-rn", "-o", "TARGET").Output()
		for _, l := range strings.Fields(string(out)) {
			if strings.HasPrefix(l, dir+"/") {
				_ = exec.Command("umount", "-l", l).Run()
			}
		}
		vm.Close()
	})
	a.SetVolumes(vm)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv, a
}

func TestVolumeCRUD(t *testing.T) {
	srv := newVolumeServer(t)
	code, v := do(t, srv, "POST", "/volumes", `{"name":"data"}`, nil)
	if code != 201 || v["volumeID"] == "" || v["token"] == "" || v["name"] != "data" {
		t.Fatalf("create = %d %v", code, v)
	}
	id := v["volumeID"].(string)
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"name":"data"}`, 409}, {`{"name":""}`, 400}, {`{"name":"vol name"}`, 400}, {`{"name":"vol.name"}`, 400},
		{`{"name":"vol/a"}`, 400}, {`{"name":"{x}"}`, 400}, {`{"name":"` + strings.Repeat("a", 65) + `"}`, 400},
		{`{"name":"x","sizeMB":33}`, 400}, {`{"name":"x","sizeMB":32}`, 201}, {`{"name":"y","sizeMB":32}`, 507},
		{`{"name":"z","future":1}`, 201}, // unknown fields are ignored, as E2B's API does
	} {
		if code, e := do(t, srv, "POST", "/volumes", c.body, nil); code != c.code {
			t.Errorf("create %s = %d %v, want %d", c.body, code, e, c.code)
		}
	}
	if code, g := do(t, srv, "GET", "/volumes/"+id, "", nil); code != 200 || g["token"] != v["token"] {
		t.Errorf("get = %d %v", code, g)
	}
	if code, _ := do(t, srv, "GET", "/volumes/nope", "", nil); code != 404 {
		t.Errorf("get missing = %d", code)
	}
	if code, _ := do(t, srv, "GET", "/volumes", "", map[string]string{"X-API-Key": ""}); code != 401 {
		t.Errorf("list without a key = %d", code)
	}
	if code, _ := do(t, srv, "DELETE", "/volumes/"+id, "", nil); code != 204 {
		t.Errorf("delete = %d", code)
	}
	if code, _ := do(t, srv, "DELETE", "/volumes/"+id, "", nil); code != 404 {
		t.Errorf("second delete = %d", code)
	}
}

// TestVolumeMountsOnCreate: bad mounts are 400s naming the problem; a used
// volume cannot be deleted; fork and snapshot of such a sandbox are 409.
func TestVolumeMountsOnCreate(t *testing.T) {
	srv := newVolumeServer(t)
	code, v := do(t, srv, "POST", "/volumes", `{"name":"data"}`, nil)
	if code != 201 {
		t.Fatal(code, v)
	}
	mount := func(ms ...string) string {
		return `{"templateID":"base","volumeMounts":[` + strings.Join(ms, ",") + `]}`
	}
	m := func(name, path string) string { return fmt.Sprintf(`{"name":%q,"path":%q}`, name, path) }
	for _, c := range []struct{ body, want string }{
		{mount(m("missing", "/mnt")), `volume "missing" not found`},
		{mount(m("data", "mnt")), "absolute"},
		{mount(m("data", "/")), "at /"},
		{mount(m("data", "/proc")), "reserved"},
		{mount(m("data", "/.sbx")), "reserved"},
		{mount(m("data", "/mnt/../x")), "not clean"},
		{mount(m("data", "/a"), m("data", "/a")), "overlap"},
		{mount(m("data", "/a"), m("data", "/b"), m("data", "/c"), m("data", "/d"), m("data", "/e"), m("data", "/f"), m("data", "/g"), m("data", "/h"), m("data", "/i")), "at most 8"},
		{`{"templateID":"base","volumeMounts":[{"name":"data"}]}`, "absolute"},
	} {
		code, e := do(t, srv, "POST", "/v2/sandboxes", c.body, nil)
		if msg, _ := e["message"].(string); code != 400 || !strings.Contains(msg, c.want) {
			t.Errorf("create %s = %d %v, want 400 with %q", c.body, code, e, c.want)
		}
	}
	code, sb := do(t, srv, "POST", "/v2/sandboxes", mount(m("data", "/mnt/data"), `{"name":"data","path":"/mnt/ro","readOnly":true}`), nil)
	if code != 201 {
		t.Fatalf("create with volumes = %d %v", code, sb)
	}
	id := sb["sandboxID"].(string)
	code, d := do(t, srv, "GET", "/sandboxes/"+id, "", nil)
	if ms, _ := d["volumeMounts"].([]any); code != 200 || len(ms) != 2 {
		t.Errorf("get = %d, volumeMounts %v", code, d["volumeMounts"])
	}
	if code, e := do(t, srv, "DELETE", "/volumes/"+v["volumeID"].(string), "", nil); code != 409 || !strings.Contains(e["message"].(string), id) {
		t.Errorf("delete of a mounted volume = %d %v, want 409 naming %s", code, e, id)
	}
	if code, _ := do(t, srv, "POST", "/sandboxes/"+id+"/fork", `{}`, nil); code != 409 {
		t.Errorf("fork of a sandbox with volumes = %d, want 409", code)
	}
	if code, _ := do(t, srv, "POST", "/sandboxes/"+id+"/snapshots", `{}`, nil); code != 409 {
		t.Errorf("snapshot of a sandbox with volumes = %d, want 409", code)
	}
	if code, _ := do(t, srv, "DELETE", "/sandboxes/"+id, "", nil); code != 204 {
		t.Fatal("kill", code)
	}
	if code, _ := do(t, srv, "DELETE", "/volumes/"+v["volumeID"].(string), "", nil); code != 204 {
		t.Errorf("delete after the sandbox ended = %d", code)
	}
}

func TestVolumeContentAPI(t *testing.T) {
	srv := newVolumeServer(t)
	_, v := do(t, srv, "POST", "/volumes", `{"name":"files"}`, nil)
	base := "/volumecontent/" + v["volumeID"].(string)
	auth := map[string]string{"X-API-Key": "", "Authorization": "Bearer " + v["token"].(string)}
	call := func(method, path, body string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		for k, v := range hdr {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	steps := []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"PUT", base + "/file?path=/d/a.txt&uid=1001&gid=1002&mode=416", "hello", 201, `"uid":1001,"gid":1002`},
		{"GET", base + "/file?path=/d/a.txt", "", 200, "hello"},
		{"GET", base + "/file?path=d/../d/a.txt", "", 200, "hello"},
		{"GET", base + "/path?path=/d/a.txt", "", 200, `"mode":416`},
		{"GET", base + "/path?path=/nope", "", 404, "not found"},
		{"GET", base + "/path", "", 400, "path"},
		{"POST", base + "/dir?path=/e/f", "", 404, "not found"},
		{"POST", base + "/dir?path=/e/f&force=true", "", 201, `"type":"directory"`},
		{"POST", base + "/dir?path=/e&mode=2541", "", 400, "permission bits"},
		{"PUT", base + "/file?path=/x&uid=70000", "x", 400, "uid"},
		{"GET", base + "/dir?path=/&depth=2", "", 200, `"path":"/e/f"`},
		{"GET", base + "/dir?path=/&depth=x", "", 400, "depth"},
		{"PATCH", base + "/path?path=/d/a.txt", `{"mode":493}`, 200, `"mode":493`},
		{"PATCH", base + "/path?path=/nope", `{"mode":493}`, 404, "not found"},
		{"DELETE", base + "/path?path=/d", "", 204, ""},
		{"DELETE", base + "/path?path=/d", "", 404, "not found"},
		{"DELETE", base + "/path?path=/", "", 400, "root"},
		{"PUT", base + "/file?path=/big", strings.Repeat("x", 20<<20), 507, "full"},
	}
	for _, s := range steps {
		code, body := call(s.method, s.path, s.body, auth)
		if code != s.code || !strings.Contains(body, s.want) {
			t.Errorf("%s %s = %d %s, want %d with %q", s.method, s.path, code, trunc(body), s.code, s.want)
		}
	}
	for _, hdr := range []map[string]string{
		{"X-API-Key": testKey}, {"Authorization": "Bearer wrong"}, {"Authorization": v["token"].(string)},
	} {
		if code, _ := call("GET", base+"/dir?path=/", "", hdr); code != 401 {
			t.Errorf("content call with %v = %d, want 401", hdr, code)
		}
	}
	if code, _ := call("GET", "/volumecontent/other/dir?path=/", "", auth); code != 401 {
		t.Errorf("another volume with this token = %d, want 401", code)
	}
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
