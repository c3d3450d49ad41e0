package validate

import (
	"os"
	"strings"
	"testing"
)

// TestChecksBite breaks the plain manifests one way at a time (text
// edits of deploy/kubernetes) and expects the decoder or the checks to
// say so; the manifests as they are pass.
func TestChecksBite(t *testing.T) {
	base := readPlain(t)
	if _, err := checked(base); err != nil {
		t.Fatalf("the manifests as they are: %v", err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"unknown field", "hostNetwork: false", "hostNetwork: false\n      hostNetwrk: true", "unknown field"},
		{"duplicate field", "hostNetwork: false", "hostNetwork: false\n      hostNetwork: false", "already set"},
		{"wrong type", "replicas: 2", "replicas: two", "cannot unmarshal"},
		{"unknown kind", "kind: Service", "kind: Servise", "not a kind"},
		{"host network", "hostNetwork: false", "hostNetwork: true", "hostNetwork"},
		{"front without role", "--role=api", "--role=node", "want api"},
		{"probe path", "path: /health", "path: /healthz", "probe is not GET /health"},
		{"latest tag", "registry.example.com/sbx:0.1.0", "registry.example.com/sbx:latest", "tagged latest"},
		{"untagged", "registry.example.com/sbx:0.1.0", "registry.example.com/sbx", "has no tag"},
		{"missing secret", "name: sbx-secrets\ntype: Opaque", "name: sbx-other\ntype: Opaque", `Secret "sbx-secrets" is not rendered`},
		{"missing key", "key: secrets-key", "key: secret-key", `no key "secret-key"`},
		{"cluster URL not from a secret", "- name: SBX_CLUSTER_URL\n", "- name: SBX_CLUSTER\n", "does not come from a Secret"},
		{"cluster URL in args", "- --log-format=json", "- --log-format=json\n            - --cluster=postgres://sbx:pw@db/sbx", "does not come from a Secret"},
		{"advertise not the pod IP", "--advertise=http://$(POD_IP):3000", "--advertise=http://10.0.0.1:3000", "downward API"},
		{"service port", "targetPort: http", "targetPort: web", "no port of the front"},
		{"shared dir on the node's disk", "- --log-format=json", "- --log-format=json\n            - --shared-dir=/var/lib/sbx", "not a PersistentVolumeClaim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("the manifests have no %q", tc.old)
			}
			_, err := checked(strings.Replace(base, tc.old, tc.new, -1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func readPlain(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"../kubernetes/sbx.yaml", "../kubernetes/secret.example.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteString("\n---\n")
	}
	return b.String()
}

func checked(stream string) (Objects, error) {
	objs, err := Decode([]byte(stream))
	if err != nil {
		return nil, err
	}
	return objs, Check(objs)
}
