package agent

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitRunIDs: /init's E2B_* ids are written to run/e2b as dot files, as
// E2B's envd does; an env without E2B_SANDBOX_ID (a pooled sandbox's
// pre-init) writes nothing; a second /init with new ids (a fork child)
// rewrites them; a symlink planted at run/e2b is never written through and
// does not fail /init.
func TestInitRunIDs(t *testing.T) {
	root := t.TempDir()
	s, err := NewServer(Config{TrustRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	post := func(body string) {
		t.Helper()
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/init", strings.NewReader(body)))
		if rec.Code != 204 {
			t.Fatalf("/init %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	dir := filepath.Join(root, runIDsDir)
	post(`{"envVars": {"A": "1"}}`)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("an env without ids made %s: %v", dir, err)
	}
	read := func(k string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "."+k))
		return string(b)
	}
	for _, id := range []string{"sbx1", "sbx2"} {
		post(`{"envVars": {"E2B_SANDBOX": "true", "E2B_SANDBOX_ID": "` + id + `", "E2B_TEAM_ID": "t", "E2B_TEMPLATE_ID": "base"}}`)
		if got := [4]string{read("E2B_SANDBOX"), read("E2B_SANDBOX_ID"), read("E2B_TEAM_ID"), read("E2B_TEMPLATE_ID")}; got != [4]string{"true", id, "t", "base"} {
			t.Fatalf("ids %v, want %s", got, id)
		}
	}
	// A link planted in place of the directory is not followed.
	other := t.TempDir()
	root2 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root2, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(root2, runIDsDir)); err != nil {
		t.Fatal(err)
	}
	s2, _ := NewServer(Config{TrustRoot: root2})
	rec := httptest.NewRecorder()
	s2.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/init", strings.NewReader(`{"envVars": {"E2B_SANDBOX_ID": "x"}}`)))
	if ents, _ := os.ReadDir(other); rec.Code != 204 || len(ents) != 0 {
		t.Fatalf("through a planted link: %d, %d files written", rec.Code, len(ents))
	}
	// A link planted in place of a file is not followed either.
	if err := os.Remove(filepath.Join(root2, runIDsDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root2, runIDsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(other, "target")
	if err := os.Symlink(target, filepath.Join(root2, runIDsDir, ".E2B_SANDBOX_ID")); err != nil {
		t.Fatal(err)
	}
	var m runIDsMemo
	if err := m.write(root2, map[string]string{"E2B_SANDBOX_ID": "y"}); err == nil {
		t.Error("a write through a planted file link succeeded")
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the link's target was written: %v", err)
	}
}
