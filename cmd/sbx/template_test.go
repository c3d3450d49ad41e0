package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sbx-dev/sbx/client"
)

func TestParseTemplateBuild(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int // 0 with ok, or the exit code
		want *buildOpts
	}{
		{"flags first", []string{"-f", "x/Dockerfile.dev", "-n", "app", "ctx"}, 0,
			&buildOpts{file: "x/Dockerfile.dev", name: "app", context: "ctx", buildArgs: kvList{}}},
		{"flags after context", []string{"ctx", "--name=app:v1", "--tag", "a", "--tag", "b", "--build-arg", "K=V", "--no-cache", "--cpu", "2", "--memory-mb", "1024"}, 0,
			&buildOpts{file: "ctx/Dockerfile", name: "app:v1", context: "ctx", tags: strList{"a", "b"},
				buildArgs: kvList{"K": "V"}, noCache: true, cpu: 2, memoryMB: 1024}},
		{"default context", []string{"-n", "app"}, 0, &buildOpts{file: "Dockerfile", name: "app", context: ".", buildArgs: kvList{}}},
		{"help", []string{"-n", "x", "--help"}, 0, nil},
		{"no name", []string{"-f", "Dockerfile"}, exitUsage, nil},
		{"two contexts", []string{"-n", "x", "a", "b"}, exitUsage, nil},
		{"bad build arg", []string{"-n", "x", "--build-arg", "nokey"}, exitUsage, nil},
		{"negative cpu", []string{"-n", "x", "--cpu", "-1"}, exitUsage, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			o, _, code, ok := parseTemplateBuild(tt.args, stdio{nil, io.Discard, &errOut})
			if tt.want == nil {
				if ok || code != tt.code {
					t.Fatalf("ok %v code %d, want code %d", ok, code, tt.code)
				}
				return
			}
			if !ok {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			if diff := cmp.Diff(tt.want, o, cmp.AllowUnexported(buildOpts{}, fromChoice{})); diff != "" {
				t.Errorf("opts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTemplateRouting(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"base", "--data-dir", "/d"}, false},
		{[]string{"code-interpreter-v1"}, false},
		{[]string{"-f", "Dockerfile"}, true},
		{[]string{"ctx", "--name=x"}, true},
		{[]string{"-n=x"}, true},
		{[]string{"--", "-n"}, false},
	}
	for _, tt := range tests {
		if got := isDockerfileBuild(tt.args); got != tt.want {
			t.Errorf("isDockerfileBuild(%q) = %v", tt.args, got)
		}
	}
}

// fakeBuilds fakes the daemon's template build API for one build whose
// status polls answer statuses in turn.
type fakeBuilds struct {
	t        *testing.T
	statuses []client.BuildStatus
	mu       sync.Mutex
	polls    int
	uploads  map[string][]string // hash -> names in the archive
	spec     client.TemplateSpec
	aliases  map[string]bool // template names GET /templates/aliases/{name} knows
}

func (f *fakeBuilds) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("X-API-Key") != testKey {
		http.Error(w, `{"code":401,"message":"bad key"}`, http.StatusUnauthorized)
		return
	}
	p := r.URL.Path
	switch {
	case r.Method == "GET" && strings.HasPrefix(p, "/templates/aliases/"):
		if name := strings.TrimPrefix(p, "/templates/aliases/"); f.aliases[name] {
			writeJSON(w, 200, map[string]any{"templateID": name + "-id", "public": false, "user": "app", "workdir": "/srv/app"})
			return
		}
		http.Error(w, `{"code":404,"message":"template not found"}`, 404)
	case r.Method == "POST" && p == "/v3/templates":
		writeJSON(w, 202, client.TemplateBuild{TemplateID: "tpl1", BuildID: "bld1", Names: []string{"app"}})
	case r.Method == "GET" && strings.HasPrefix(p, "/templates/tpl1/files/"):
		writeJSON(w, 200, client.FileUpload{URL: "/upload/" + filepath.Base(p)})
	case r.Method == "PUT" && strings.HasPrefix(p, "/upload/"):
		f.uploads[filepath.Base(p)] = tarNames(f.t, r.Body)
		w.WriteHeader(201)
	case r.Method == "POST" && p == "/v2/templates/tpl1/builds/bld1":
		must(f.t, json.NewDecoder(r.Body).Decode(&f.spec))
		w.WriteHeader(202)
	case r.Method == "GET" && p == "/templates/tpl1/builds/bld1/status":
		f.status(w, r)
	default:
		http.Error(w, `{"code":404,"message":"no route"}`, 404)
	}
}

// status answers the next status, with the log entries from logsOffset.
func (f *fakeBuilds) status(w http.ResponseWriter, r *http.Request) {
	st := f.statuses[min(f.polls, len(f.statuses)-1)]
	f.polls++
	var off int
	fmt.Sscan(r.URL.Query().Get("logsOffset"), &off)
	all := st.LogEntries
	st.LogEntries = []client.BuildLogEntry{}
	if off < len(all) {
		st.LogEntries = all[off:]
	}
	writeJSON(w, 200, st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func tarNames(t *testing.T, r io.Reader) []string {
	zr, err := gzip.NewReader(r)
	must(t, err)
	var names []string
	for tr := tar.NewReader(zr); ; {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		must(t, err)
		names = append(names, h.Name)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func logEntries(msgs ...string) []client.BuildLogEntry {
	var es []client.BuildLogEntry
	for _, m := range msgs {
		es = append(es, client.BuildLogEntry{Timestamp: time.Now(), Level: "info", Message: m})
	}
	return es
}

// buildContext writes a context with a Dockerfile, files and a .dockerignore.
func buildContext(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"Dockerfile":    "FROM python:3.12\nARG V=1\nCOPY app/ /app/\nCOPY req.txt /app/\nRUN pip install -r /app/req.txt\nEXPOSE 80\nCMD [\"python\", \"/app/main.py\"]\n",
		"app/main.py":   "print('hi')\n",
		"app/secret":    "x",
		"req.txt":       "flask\n",
		".dockerignore": "# comment\napp/secret\n",
	}
	for name, data := range files {
		must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	return dir
}

func TestTemplateBuild(t *testing.T) {
	pollInterval = time.Millisecond
	logs := logEntries("Building template tpl1/bld1", "[1/3] COPY app/ /app/", "Collecting flask", "Build finished")
	tests := []struct {
		name     string
		final    client.BuildStatus
		code     int
		stderrIn []string
	}{
		{"ready", client.BuildStatus{Status: "ready", LogEntries: logs}, 0,
			[]string{"Uploaded 'app/'", "Uploaded 'req.txt'", "Collecting flask", "Build finished", "template app ready: tpl1"}},
		{"error", client.BuildStatus{Status: "error", LogEntries: logs[:3],
			Reason: &client.BuildReason{Message: "pip exited with 1", Step: "3"}}, 1,
			[]string{"Collecting flask", "the build failed at step 3: pip exited with 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeBuilds{t: t, uploads: map[string][]string{}, statuses: []client.BuildStatus{
				{Status: "waiting", LogEntries: logs[:1]}, {Status: "building", LogEntries: logs[:3]}, tt.final}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			ctxDir := buildContext(t)
			code, out, errOut := templateCLI(t, srv.URL, "build", ctxDir, "-n", "app", "--build-arg", "V=2")
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, errOut)
			}
			checkOrder(t, errOut, tt.stderrIn)
			if tt.code == 0 && out != "tpl1\n" {
				t.Errorf("stdout %q, want the template ID", out)
			}
			checkBuildRequests(t, f)
		})
	}
}

// checkOrder checks that the strings appear in s in this order.
func checkOrder(t *testing.T, s string, want []string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q after offset %d:\n%s", w, at, s)
		}
		at += i + len(w)
	}
}

// checkBuildRequests checks the spec and that each COPY's files arrived
// under the hash the spec names, .dockerignore honoured.
func checkBuildRequests(t *testing.T, f *fakeBuilds) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spec.FromImage != "python:3.12" || f.spec.StartCmd != "python /app/main.py" {
		t.Errorf("spec %+v", f.spec)
	}
	var copies [][]string
	for _, s := range f.spec.Steps {
		if s.Type == "COPY" {
			copies = append(copies, f.uploads[s.FilesHash])
		}
	}
	want := [][]string{{"app/", "app/main.py"}, {"req.txt"}}
	if diff := cmp.Diff(want, copies); diff != "" {
		t.Errorf("uploaded archives by COPY (-want +got):\n%s", diff)
	}
}

func templateCLI(t *testing.T, url string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	t.Setenv("SBX_URL", url)
	t.Setenv("SBX_API_KEY", testKey)
	code := runTemplateStd(context.Background(), args, stdio{strings.NewReader(""), &out, &errOut})
	return code, out.String(), errOut.String()
}
