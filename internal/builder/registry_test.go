package builder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template"
	"github.com/sbx-dev/sbx/internal/template/layers"
)

// TestRegistryBuiltins: a registered built-in resolves to its layer stack
// (topmost first); one of the layout before the builder made built-ins is
// not served, and the create's error says how to rebuild it.
func TestRegistryBuiltins(t *testing.T) {
	dir := t.TempDir()
	ls := &layers.Store{Dir: filepath.Join(dir, "layers")}
	var ids []string
	for _, k := range []string{strings.Repeat("a1", 32), strings.Repeat("b2", 32)} {
		if _, err := ls.Ensure(context.Background(), k, func(string) error { return nil }); err != nil {
			t.Fatal(err)
		}
		id, _ := layers.ID(k)
		ids = append(ids, id)
	}
	ts := &template.Store{Dir: dir}
	must(t, ts.Register(&template.Template{Name: "base", Layers: ids, Key: strings.Repeat("b2", 32), Runtime: "crun", MemoryMB: 1024}, nil))
	must(t, os.MkdirAll(filepath.Join(dir, "old", "rootfs"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "old", "template.json"), []byte(`{"name":"old","digest":"sha256:00"}`), 0o644))
	r := &Registry{Builtins: ts, Layers: ls}
	tm, err := r.Get("base")
	if err != nil || tm.Name != "base" || tm.Runtime != "crun" || tm.MemoryMB != 1024 || tm.Build != "" {
		t.Fatalf("Get(base) = %+v, %v", tm, err)
	}
	if lower, err := tm.Lower(context.Background(), false); err != nil || lower != ls.Path(ids[1])+":"+ls.Path(ids[0]) {
		t.Errorf("lower = %q, %v", lower, err)
	}
	if _, err := r.Get("old"); !errors.Is(err, sandbox.ErrNotFound) || !strings.Contains(err.Error(), "sbx template build old") {
		t.Errorf("Get(old) = %v; want not found, with how to rebuild", err)
	}
	if _, err := r.Get("nope"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Get(nope) = %v", err)
	}
	if l, err := r.List(); err != nil || len(l) != 1 || l[0].Name != "base" {
		t.Errorf("List = %+v, %v", l, err)
	}
}

// TestRegistryPresent: a user template is reported present (id and names)
// only when its latest ready build has every layer here.
func TestRegistryPresent(t *testing.T) {
	ls := &layers.Store{Dir: filepath.Join(t.TempDir(), "layers")}
	k := strings.Repeat("c3", 32)
	if _, err := ls.Ensure(context.Background(), k, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	have, _ := layers.ID(k)
	missing, _ := layers.ID(strings.Repeat("d4", 32))
	r := &Registry{Layers: ls}
	r.idx = index{
		templates: map[string]*store.TemplateRec{"t1": {ID: "t1", Names: []string{"mine"}}, "t2": {ID: "t2"}, "t3": {ID: "t3"}},
		byName:    map[nameKey]string{{"", "mine"}: "t1"},
		builds: map[string]*store.BuildRec{
			"b1": {ID: "b1", TemplateID: "t1", Status: "ready", Layers: []string{have}},
			"b2": {ID: "b2", TemplateID: "t2", Status: "ready", Layers: []string{have, missing}},
			"b3": {ID: "b3", TemplateID: "t3", Status: "building"},
		},
		tags: map[string]map[string]string{"t1": {"latest": "b1"}, "t2": {"latest": "b2"}, "t3": {"latest": "b3"}},
	}
	if got := strings.Join(r.Present(), ","); got != "mine,t1" {
		t.Errorf("Present = %s, want mine,t1", got)
	}
	r.idx.owner = map[string]string{"t1": "team_a"} // another team's: namespaced
	if got := strings.Join(r.Present(), ","); got != "t1,team_a/mine" {
		t.Errorf("Present = %s, want t1,team_a/mine", got)
	}
}
