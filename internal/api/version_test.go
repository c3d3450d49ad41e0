package api_test

import (
	"runtime"
	"testing"

	"github.com/sbx-dev/sbx/internal/version"
)

// TestVersion: GET /sbx/version reports the build, to API keys only.
func TestVersion(t *testing.T) {
	srv, _ := newServer(t)
	code, v := do(t, srv, "GET", "/sbx/version", "", nil)
	if code != 200 || v["version"] != version.Version || v["goVersion"] != runtime.Version() || v["platform"] == "" {
		t.Fatalf("status %d, body %v", code, v)
	}
	if code, _ := do(t, srv, "GET", "/sbx/version", "", map[string]string{"X-API-Key": ""}); code != 401 {
		t.Fatalf("without a key: status %d, want 401", code)
	}
}
