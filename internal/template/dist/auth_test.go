package dist

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/sbx-dev/sbx/internal/template/layers"
)

// TestRegistryCredentials: a registry that wants a login is reached with
// the credentials of the docker config (authn.DefaultKeychain, as the
// daemon wires it); without them push and pull fail naming the refusal and
// the pull leaves no partial layer.
func TestRegistryCredentials(t *testing.T) {
	requireRoot(t)
	h := registry.New(registry.Logger(nullLog()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if u, p, ok := q.BasicAuth(); !ok || u != "node" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="sbx-test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, q)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	remoteOf := func(s *layers.Store) *Remote {
		return &Remote{Repo: host + "/sbx/templates", Insecure: true, Layers: s, Keychain: authn.DefaultKeychain}
	}

	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no config: anonymous
	if _, err := remoteOf(built(t)).Push(context.Background(), meta()); !refused(err) {
		t.Fatalf("push without credentials: %v, want a 401", err)
	}

	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("node:s3cret"))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{"`+host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	if _, err := remoteOf(built(t)).Push(context.Background(), meta()); err != nil {
		t.Fatalf("push with the docker config's credentials: %v", err)
	}
	b := emptyStore(t)
	if n, err := remoteOf(b).Pull(context.Background(), meta()); err != nil || n != 2 {
		t.Fatalf("pull with credentials: n=%d err=%v", n, err)
	}

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	c := emptyStore(t)
	if _, err := remoteOf(c).Pull(context.Background(), meta()); !refused(err) {
		t.Fatalf("pull without credentials: %v, want a 401", err)
	}
	if l := leftovers(t, c); len(l) != 0 {
		t.Fatalf("partial layers left: %v", l)
	}
}

// refused: err is the registry's 401 (a HEAD has no body: its status only).
func refused(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "UNAUTHORIZED") || strings.Contains(err.Error(), "401 Unauthorized"))
}
