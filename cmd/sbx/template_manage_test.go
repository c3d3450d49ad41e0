package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// fakeTemplates serves one template, "app" (ID tpl1), and records deletes.
type fakeTemplates struct{ deleted []string }

func (f *fakeTemplates) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	switch p := r.URL.Path; {
	case r.Method == "GET" && p == "/templates":
		writeJSON(w, 200, []client.TemplateInfo{{TemplateID: "tpl1", BuildID: "b1", Names: []string{"app"}, BuildStatus: "ready",
			CPUCount: 2, MemoryMB: 512, BuildCount: 1, CreatedAt: now, UpdatedAt: now}})
	case r.Method == "GET" && p == "/templates/aliases/app":
		writeJSON(w, 200, client.TemplateAlias{TemplateID: "tpl1"})
	case r.Method == "GET" && p == "/templates/tpl1":
		writeJSON(w, 200, client.TemplateDetail{TemplateID: "tpl1", Names: []string{"app"},
			Builds: []client.TemplateBuildRef{{BuildID: "b1", Status: "ready"}}})
	case r.Method == "DELETE" && p == "/templates/tpl1":
		f.deleted = append(f.deleted, "tpl1")
		w.WriteHeader(204)
	default:
		writeJSON(w, 404, map[string]any{"code": 404, "message": "template not found"})
	}
}

func TestTemplateManage(t *testing.T) {
	f := &fakeTemplates{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	tests := []struct {
		name string
		args []string
		code int
		out  []string
	}{
		{"ls", []string{"ls"}, 0, []string{"ID", "NAMES", "tpl1", "app", "ready", "512 MiB"}},
		{"ls json", []string{"ls", "--json"}, 0, []string{`"templateID": "tpl1"`, `"buildCount": 1`}},
		{"ls stray arg", []string{"ls", "x"}, exitUsage, nil},
		{"inspect by name", []string{"inspect", "app"}, 0, []string{`"templateID": "tpl1"`, `"buildID": "b1"`}},
		{"inspect by id, flags after", []string{"inspect", "tpl1", "--url", srv.URL}, 0, []string{`"builds"`}},
		{"inspect unknown", []string{"inspect", "nope"}, 1, nil},
		{"inspect help", []string{"inspect", "--help"}, 0, nil},
		{"rm", []string{"rm", "app", "nope"}, 1, []string{"app\n"}},
		{"rm nothing", []string{"rm"}, exitUsage, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := templateCLI(t, srv.URL, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, errOut)
			}
			for _, s := range tt.out {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
		})
	}
	if len(f.deleted) != 1 {
		t.Errorf("deleted %v, want [tpl1]", f.deleted)
	}
}
