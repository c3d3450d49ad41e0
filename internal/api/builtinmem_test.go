package api_test

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/template"
	"github.com/sbx-dev/sbx/internal/template/layers"
)

// TestBuiltinListsItsMemory: GET /templates shows a built-in template's own
// memory (code-interpreter-v1's 1024 MiB, what its sandboxes get), not the
// daemon's default.
func TestBuiltinListsItsMemory(t *testing.T) {
	dir := t.TempDir()
	a, _ := newTemplateAPIAt(t, dir)
	key := strings.Repeat("ab", 32) // the layer newTemplateAPIAt made for base
	id, _ := layers.ID(key)
	if err := (&template.Store{Dir: filepath.Join(dir, "templates")}).Register(&template.Template{Name: "big", Layers: []string{id}, Key: key, MemoryMB: 1024}, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	var list []map[string]any
	if code := getJSON(t, srv, "/templates", &list); code != 200 {
		t.Fatalf("GET /templates = %d", code)
	}
	got := map[string]any{}
	for _, tm := range list {
		got[tm["templateID"].(string)] = tm["memoryMB"]
	}
	if got["big"] != float64(1024) || got["base"] == float64(1024) {
		t.Errorf("memoryMB by template = %v, want big 1024 and base the default", got)
	}
}
