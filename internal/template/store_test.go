package template

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func registered(name string) *Template {
	return &Template{Name: name, Created: time.Now().UTC().Truncate(time.Second), BuildID: "b-" + name,
		Layers: []string{"aaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbb"}, Key: "k-" + name}
}

func TestGet(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	must(t, s.Register(registered("base"), map[string]string{"rootfs": "layers/aaaaaaaaaaaaaaaaaaaaaaaa/r/fs"}))
	must(t, os.MkdirAll(filepath.Join(s.Dir, "broken"), 0o755))
	must(t, os.WriteFile(filepath.Join(s.Dir, "broken", metaFile), []byte("{"), 0o644))
	// the layout of sbx before built-ins were made by the builder: a tree, no layers
	must(t, os.MkdirAll(filepath.Join(s.Dir, "old", "rootfs", "etc"), 0o755))
	old, _ := json.Marshal(map[string]any{"name": "old", "buildId": "x", "digest": "sha256:00"})
	must(t, os.WriteFile(filepath.Join(s.Dir, "old", metaFile), old, 0o644))
	for _, tc := range []struct {
		name     string
		notFound bool // else: found, or another error
		ok       bool
	}{
		{"base", false, true},
		{"old", true, false},
		{"nope", true, false},
		{"../etc", true, false},
		{"", true, false},
		{".build-base-1", true, false},
		{"UPPER", true, false},
		{"broken", false, false},
	} {
		tm, err := s.Get(tc.name)
		if tc.ok != (err == nil) || tc.notFound != errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v", tc.name, err)
		}
		if tc.ok && (tm.Key != "k-base" || len(tm.Layers) != 2) {
			t.Errorf("Get(%q) = %+v", tc.name, tm)
		}
	}
	if _, err := s.Get("old"); !errors.Is(err, ErrOldLayout) || !strings.Contains(err.Error(), "sbx template build old") {
		t.Errorf("Get of the old layout = %v; want ErrOldLayout with how to rebuild", err)
	}
	if l, err := os.Readlink(filepath.Join(s.Dir, "base", "rootfs")); err != nil || l != "layers/aaaaaaaaaaaaaaaaaaaaaaaa/r/fs" {
		t.Errorf("rootfs link = %q, %v", l, err)
	}
}

func TestList(t *testing.T) {
	s := &Store{Dir: filepath.Join(t.TempDir(), "templates")}
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("List of a missing dir = %v, %v", l, err)
	}
	must(t, s.Register(registered("zeta"), nil))
	must(t, s.Register(registered("base"), nil))
	must(t, os.MkdirAll(filepath.Join(s.Dir, ".build-x-123", "rootfs"), 0o755))
	must(t, os.MkdirAll(filepath.Join(s.Dir, "stray"), 0o755))
	must(t, os.MkdirAll(filepath.Join(s.Dir, "layers", "aaaaaaaaaaaaaaaaaaaaaaaa"), 0o755))
	l, err := s.List()
	if err != nil || len(l) != 2 || l[0].Name != "base" || l[1].Name != "zeta" {
		t.Fatalf("List = %v, %v", l, err)
	}
}

// TestRegisterReplaces: a registration replaces an older one and a tree of
// the old layout, and removes what interrupted registrations left.
func TestRegisterReplaces(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	must(t, os.MkdirAll(filepath.Join(s.Dir, "base", "rootfs", "usr", "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(s.Dir, "base", metaFile), []byte(`{"name":"base"}`), 0o644))
	must(t, os.MkdirAll(filepath.Join(s.Dir, ".build-base-1", "x"), 0o755))
	must(t, os.MkdirAll(filepath.Join(s.Dir, ".old-base-2", "t"), 0o755))
	if _, err := s.Get("base"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old layout served: %v", err)
	}
	first := registered("base")
	must(t, s.Register(first, map[string]string{"rootfs": "x"}))
	second := registered("base")
	second.BuildID = "second"
	must(t, s.Register(second, nil))
	got, err := s.Get("base")
	if err != nil || got.BuildID != "second" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	ents, _ := os.ReadDir(s.Dir)
	if len(ents) != 1 || ents[0].Name() != "base" {
		t.Errorf("left in the store: %v", ents)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir, "base", "rootfs")); !os.IsNotExist(err) {
		t.Errorf("the replaced registration's tree is still there: %v", err)
	}
	if err := s.Register(registered("../x"), nil); err == nil {
		t.Error("Register of a bad name succeeded")
	}
}

// TestRegistrationKeepsDefaults: what a definition says about its
// sandboxes (memory, runtime) survives the registration.
func TestRegistrationKeepsDefaults(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	tm := registered("code-interpreter-v1")
	tm.MemoryMB, tm.Runtime = 1024, "crun"
	must(t, s.Register(tm, nil))
	got, err := s.Get(tm.Name)
	if err != nil || got.MemoryMB != 1024 || got.Runtime != "crun" {
		t.Errorf("Get = %+v, %v", got, err)
	}
}
