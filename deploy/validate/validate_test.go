package validate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

const chart = "../helm/sbx"

// helm is the helm binary ($SBX_HELM, else on PATH); without it the test
// skips, or fails under CI=true.
func helm(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SBX_HELM"); p != "" {
		return p
	}
	p, err := exec.LookPath("helm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("helm not found (set SBX_HELM); CI=true makes this a failure")
		}
		t.Skip("helm not found (set SBX_HELM)")
	}
	return p
}

// render runs helm template on the chart with args, offline.
func render(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(helm(t), append([]string{"template", "sbx", chart, "--namespace", "sbx"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, &renderError{err: err, stderr: stderr.String()}
	}
	return out, nil
}

type renderError struct {
	err    error
	stderr string
}

func (e *renderError) Error() string { return e.err.Error() + ": " + e.stderr }

func decodeChecked(t *testing.T, stream []byte) Objects {
	t.Helper()
	objs, err := Decode(stream)
	if err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	if err := Check(objs); err != nil {
		t.Fatalf("checks:\n%v", err)
	}
	return objs
}

func kinds(objs Objects) map[string]int {
	m := map[string]int{}
	for _, o := range objs {
		m[typeName(o)]++
	}
	return m
}

func typeName(o any) string {
	switch o.(type) {
	case *appsv1.DaemonSet:
		return "DaemonSet"
	case *appsv1.Deployment:
		return "Deployment"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *corev1.Service:
		return "Service"
	case *corev1.Secret:
		return "Secret"
	}
	return "other"
}

// TestChart renders the chart with its default values (PostgreSQL in the
// chart) and with an external PostgreSQL, each decoded strictly and checked.
func TestChart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		kinds  map[string]int
		dbHost string
	}{
		{"default", nil, map[string]int{"DaemonSet": 1, "Deployment": 1, "StatefulSet": 1, "Service": 2, "Secret": 1}, "sbx-postgresql:5432"},
		{"external-postgres", []string{"-f", chart + "/ci/external-postgres-values.yaml"},
			map[string]int{"DaemonSet": 1, "Deployment": 1, "Service": 1, "Secret": 1}, "db.internal:5432"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			objs := decodeChecked(t, out)
			if got := kinds(objs); !equalCounts(got, tc.kinds) {
				t.Errorf("kinds %v, want %v", got, tc.kinds)
			}
			for _, o := range objs {
				if s, ok := o.(*corev1.Secret); ok && !strings.Contains(s.StringData["cluster-url"], "@"+tc.dbHost+"/") {
					t.Errorf("cluster-url %q, want the server %s", s.StringData["cluster-url"], tc.dbHost)
				}
			}
		})
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestChartRefuses: values the chart must not render.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"latest tag", []string{"--set", "image.tag=latest"}, "not latest"},
		{"external without url", []string{"--set", "postgresql.enabled=false"}, "externalDatabase.url is required"},
		{"postgres latest", []string{"--set", "postgresql.image.tag=latest"}, "pin a version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestChartSecretsGenerated: empty secret values are generated, long
// enough for sbx (cluster secret 32+ bytes, sealing key 32 bytes).
func TestChartSecretsGenerated(t *testing.T) {
	out, err := render(t)
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeChecked(t, out)
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok {
			if n := len(s.StringData["cluster-secret"]); n < 32 {
				t.Errorf("cluster-secret: %d bytes, want 32+", n)
			}
			if n := len(s.StringData["secrets-key"]); n != 44 { // base64 of 32 bytes
				t.Errorf("secrets-key: %d chars, want base64 of 32 bytes", n)
			}
			if !strings.HasPrefix(s.StringData["api-key"], "sbx_") {
				t.Errorf("api-key %q", s.StringData["api-key"])
			}
		}
	}
}

// TestPlainManifests: deploy/kubernetes is the chart rendered with
// deploy/kubernetes/values.yaml (regenerate with deploy/kubernetes/generate.sh
// on a change), and with secret.example.yaml it decodes and checks clean.
func TestPlainManifests(t *testing.T) {
	const dir = "../kubernetes"
	want, err := render(t, "-f", dir+"/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(dir, "sbx.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stripHeader(have), want) {
		t.Errorf("deploy/kubernetes/sbx.yaml differs from the chart: run deploy/kubernetes/generate.sh")
	}
	secret, err := os.ReadFile(filepath.Join(dir, "secret.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeChecked(t, append(append(have, "\n---\n"...), secret...))
	if got := kinds(objs); got["Secret"] != 1 {
		t.Errorf("kinds %v, want the one example Secret", got)
	}
}

// stripHeader drops the leading comment lines generate.sh writes.
func stripHeader(b []byte) []byte {
	for bytes.HasPrefix(b, []byte("#!")) || bytes.HasPrefix(b, []byte("# sbx:")) {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil
		}
		b = b[i+1:]
	}
	return b
}

// TestDockerfileRunsc: the image builds the runsc scripts/install.sh pins.
func TestDockerfileRunsc(t *testing.T) {
	pin := func(path, prefix string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				return strings.Fields(v)[0]
			}
		}
		t.Fatalf("%s: no line %q", path, prefix)
		return ""
	}
	got, want := pin("../Dockerfile", "ARG GVISOR_VERSION="), pin("../../scripts/install.sh", "GVISOR_VERSION=")
	if got != want {
		t.Errorf("deploy/Dockerfile builds runsc %s, scripts/install.sh pins %s", got, want)
	}
}
