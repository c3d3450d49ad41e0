package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/client/clienttest"
)

// TestDebugBundleNeedsAdmin: with a team key the bundle is refused up front
// (exit 1, the admin key named, no partial file), as the other admin-only
// commands are; with the admin key it is written.
func TestDebugBundleNeedsAdmin(t *testing.T) {
	srv := clienttest.NewServer(t, testKey)
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/health" || r.URL.Path == "/sbx/version" {
			_, _ = w.Write([]byte(`{"status":"ok"}`))
			return true
		}
		if r.Header.Get("X-API-Key") != testKey {
			clienttest.WriteError(w, http.StatusForbidden, "this endpoint needs an admin key")
			return true
		}
		_, _ = w.Write([]byte("x"))
		return true
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "team.tar.gz")
	code, _, errOut := runAt(t, srv.URL, "e2b_teamkey", "debug", "bundle", "-o", out)
	if code == 0 || !strings.Contains(errOut, "admin") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("team key: exit %d, stderr %q; want 1 and one line naming the admin key", code, errOut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("team key: a partial bundle was written")
	}
	out = filepath.Join(dir, "admin.tar.gz")
	if code, _, errOut := runAt(t, srv.URL, testKey, "debug", "bundle", "-o", out); code != 0 || errOut != "" {
		t.Errorf("admin key: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("admin key: %v", err)
	}
}
