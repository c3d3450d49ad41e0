package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sbx-dev/sbx/client"
)

func TestTemplateName(t *testing.T) {
	tests := []struct {
		ref, name string
		ok        bool
	}{
		{"base", "base", true},
		{"my-app:v1", "my-app", true},
		{"team-ns/my-app:v2", "team-ns/my-app", true},
		{"docker.io/library/base", "", false},
		{"localhost/x", "", false},
		{"localhost:5000/base", "", false},
		{"reg.example.com/a/b:1", "", false},
		{"base@sha256:abcd", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		name, ok := templateName(tt.ref)
		if name != tt.name || ok != tt.ok {
			t.Errorf("templateName(%q) = %q, %v; want %q, %v", tt.ref, name, ok, tt.name, tt.ok)
		}
	}
}

// TestTemplateBuildFromTemplate: a Dockerfile's FROM that names an sbx
// template (no registry host) builds on it (fromTemplate, offline), with
// its tag; one with a registry host, or naming no template, is pulled; a
// failed base step says how the FROM was read. Its steps run as root in
// /, and the template keeps the base's user and workdir (the alias
// answer's).
func TestTemplateBuildFromTemplate(t *testing.T) {
	pollInterval = 0
	ready := client.BuildStatus{Status: "ready"}
	failed := client.BuildStatus{Status: "error", Reason: &client.BuildReason{Message: "pulling: no such host", Step: "base"}}
	tests := []struct {
		from            string
		final           client.BuildStatus
		wantTmpl, wantI string
		stderrIn        []string
	}{
		{"base", ready, "base", "", []string{"FROM base: building on the sbx template base (FROM docker.io/library/base would pull the image)"}},
		{"my-app:v1", ready, "my-app:v1", "", []string{"the sbx template my-app"}},
		{"ns/my-app", ready, "ns/my-app", "", []string{"FROM docker.io/ns/my-app would pull"}},
		{"docker.io/library/base", ready, "", "docker.io/library/base", nil},
		{"python:3.12", ready, "", "python:3.12", nil},
		{"python:3.12", failed, "", "python:3.12", []string{"failed at step base", "FROM python:3.12 is not an sbx template this key can use (sbx template ls lists them)"}},
		{"my-app", failed, "my-app", "", []string{"failed at step base", "FROM my-app was read as the sbx template my-app; to pull the image, write FROM docker.io/library/my-app"}},
	}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			f := &fakeBuilds{t: t, uploads: map[string][]string{}, statuses: []client.BuildStatus{tt.final},
				aliases: map[string]bool{"base": true, "my-app": true, "ns%2Fmy-app": true, "ns/my-app": true}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+tt.from+"\nRUN true\n"), 0o644))
			code, _, errOut := templateCLI(t, srv.URL, "build", dir, "-n", "app")
			if want := map[bool]int{true: 0, false: 1}[tt.final.Status == "ready"]; code != want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, want, errOut)
			}
			if f.spec.FromTemplate != tt.wantTmpl || f.spec.FromImage != tt.wantI {
				t.Errorf("fromTemplate %q fromImage %q, want %q %q", f.spec.FromTemplate, f.spec.FromImage, tt.wantTmpl, tt.wantI)
			}
			checkOrder(t, errOut, tt.stderrIn)
			want := []client.TemplateStep{{Type: "USER", Args: []string{"root"}}, {Type: "WORKDIR", Args: []string{"/"}}, {Type: "RUN", Args: []string{"true"}},
				{Type: "USER", Args: []string{"app"}}, {Type: "WORKDIR", Args: []string{"/srv/app"}}}
			if tt.wantTmpl != "" && !reflect.DeepEqual(f.spec.Steps, want) {
				t.Errorf("steps on a template %+v, want %+v (as root in /, then the template's user and workdir)", f.spec.Steps, want)
			}
		})
	}
}
