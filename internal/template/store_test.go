package template

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeBuilt writes a template directory as a build would leave it.
func fakeBuilt(t *testing.T, s *Store, name string) *Template {
	t.Helper()
	dir := filepath.Join(s.Dir, name)
	for _, d := range []string{"rootfs", "rootfs-userns"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	tm := Template{Name: name, Created: time.Now().UTC().Truncate(time.Second), BuildID: randHex(8)}
	b, _ := json.Marshal(tm)
	must(t, os.WriteFile(filepath.Join(dir, metaFile), b, 0o644))
	return &tm
}

func TestGet(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	fakeBuilt(t, s, "base")
	must(t, os.MkdirAll(filepath.Join(s.Dir, "broken"), 0o755))
	must(t, os.WriteFile(filepath.Join(s.Dir, "broken", metaFile), []byte("{"), 0o644))
	for _, tc := range []struct {
		name     string
		notFound bool // else: found, or another error
		ok       bool
	}{
		{"base", false, true},
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
		if tc.ok && (tm.Rootfs != filepath.Join(s.Dir, "base", "rootfs") || tm.RootfsUserNS != filepath.Join(s.Dir, "base", "rootfs-userns")) {
			t.Errorf("Get(%q) paths %q %q", tc.name, tm.Rootfs, tm.RootfsUserNS)
		}
	}
}

func TestList(t *testing.T) {
	s := &Store{Dir: filepath.Join(t.TempDir(), "templates")}
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("List of a missing dir = %v, %v", l, err)
	}
	fakeBuilt(t, s, "zeta")
	fakeBuilt(t, s, "base")
	must(t, os.MkdirAll(filepath.Join(s.Dir, ".build-x-123", "rootfs"), 0o755))
	must(t, os.MkdirAll(filepath.Join(s.Dir, "stray"), 0o755))
	must(t, os.WriteFile(filepath.Join(s.Dir, ".lock"), nil, 0o600))
	l, err := s.List()
	if err != nil || len(l) != 2 || l[0].Name != "base" || l[1].Name != "zeta" {
		t.Fatalf("List = %v, %v", l, err)
	}
}

func TestBuildReturnsCached(t *testing.T) {
	s := &Store{Dir: t.TempDir(), Seed: "/nonexistent"} // a build would fail
	want := fakeBuilt(t, s, "base")
	start := time.Now()
	got, err := s.Build(context.Background(), "base", &bytes.Buffer{})
	if err != nil || got.BuildID != want.BuildID {
		t.Fatalf("Build = %+v, %v; want the cached one", got, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cached Build took %s", d)
	}
	if _, err := s.Build(context.Background(), "no-such-def", &bytes.Buffer{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Build of an unknown definition = %v", err)
	}
}

// TestBuildInterrupted cancels a build: it fails, leaves no template and no
// build directory, and also reaps what an earlier crashed build left
// (mounts included).
func TestBuildInterrupted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	s := &Store{Dir: t.TempDir(), Seed: t.TempDir()}
	stale := filepath.Join(s.Dir, ".build-base-crashed")
	must(t, os.MkdirAll(filepath.Join(stale, "rootfs", "proc"), 0o755))
	must(t, unix.Mount("tmpfs", filepath.Join(stale, "rootfs", "proc"), "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(stale, "rootfs", "proc"), unix.MNT_DETACH) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Build(ctx, "base", &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Build = %v, want context.Canceled", err)
	}
	ents, _ := os.ReadDir(s.Dir)
	for _, e := range ents {
		if e.Name() != ".lock" {
			t.Errorf("left %s", e.Name())
		}
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(b, []byte(stale)) {
		t.Error("stale build's mount left")
	}
}

// TestBuildWaitsForLock: a second builder waits for the first (here: until
// its context ends).
func TestBuildWaitsForLock(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	unlock, err := s.lock(context.Background())
	must(t, err)
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.Build(ctx, "base", &bytes.Buffer{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Build while locked = %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteMetaKeepsDefaults: what a definition says about its sandboxes
// (memory, runtime) reaches template.json and comes back from Get.
func TestWriteMetaKeepsDefaults(t *testing.T) {
	s := &Store{Dir: t.TempDir(), UIDBase: 100000}
	def := Definitions["code-interpreter-v1"]
	dir := filepath.Join(s.Dir, def.Name)
	for _, d := range []string{"rootfs", "rootfs-userns"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(t, s.writeMeta(def, dir))
	tm, err := s.Get(def.Name)
	if err != nil {
		t.Fatal(err)
	}
	if tm.MemoryMB != 1024 || tm.Runtime != def.Runtime || len(tm.Packages) != len(def.Base)+len(def.Apt) {
		t.Errorf("Get = memoryMB %d, runtime %q, %d packages", tm.MemoryMB, tm.Runtime, len(tm.Packages))
	}
}
