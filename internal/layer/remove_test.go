package layer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRemove(t *testing.T) {
	needRoot(t)
	dir := newDir(t)
	l, err := Prepare(dir, newLower(t), Options{DiskBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	busy, err := os.Open(filepath.Join(l.Rootfs, "base.txt")) // a sandbox process still holding a file
	must(t, err)
	defer busy.Close()
	for i := range 2 { // idempotent
		if err := l.Remove(); err != nil {
			t.Fatalf("Remove #%d: %v", i+1, err)
		}
		assertGone(t, dir)
	}
}

// TestCleanupAfterCrash drops the Layer (a daemon crash), adds a mount a
// runtime might have left inside the rootfs, and reaps by directory only.
func TestCleanupAfterCrash(t *testing.T) {
	needRoot(t)
	dir, lower := newDir(t), newLower(t)
	if _, err := Prepare(dir, lower, Options{DiskBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir)
	if err != nil || !Mounted(dir) {
		t.Fatalf("Open after restart: %v", err)
	}
	nested := filepath.Join(l.Rootfs, "dir")
	must(t, unix.Mount("tmpfs", nested, "tmpfs", 0, "size=1m"))
	must(t, os.WriteFile(filepath.Join(nested, "keep"), nil, 0o644))
	if err := Cleanup(dir); err != nil {
		t.Fatal(err)
	}
	assertGone(t, dir)
	if b, err := os.ReadFile(filepath.Join(lower, "base.txt")); err != nil || string(b) != "template" {
		t.Fatalf("template damaged: %q %v", b, err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrNotMounted) && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a reaped layer = %v", err)
	}
	if err := Cleanup(filepath.Join(t.TempDir(), "never-existed", "x")); err != nil {
		t.Fatalf("Cleanup of nothing: %v", err)
	}
}

func TestPrepareErrorsLeaveNothing(t *testing.T) {
	needRoot(t)
	file := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(file, nil, 0o644))
	comma := filepath.Join(t.TempDir(), "a,b")
	must(t, os.Mkdir(comma, 0o755))
	for _, tc := range []struct{ name, lower string }{
		{"missing lower", "/nonexistent-lower"},
		{"lower is a file", file},
		{"comma in lower", comma},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newDir(t)
			if _, err := Prepare(dir, tc.lower, Options{}); err == nil {
				t.Fatal("Prepare succeeded")
			}
			assertGone(t, dir)
		})
	}
	t.Run("dir exists", func(t *testing.T) {
		dir := newDir(t)
		must(t, os.Mkdir(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "other"), nil, 0o644))
		if _, err := Prepare(dir, newLower(t), Options{}); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("Prepare over an existing dir = %v, want ErrExist", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "other")); err != nil {
			t.Fatal("Prepare removed a directory it did not create")
		}
	})
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`/a/b`: "/a/b", `/a\040b`: "/a b", `/a\011b\012`: "/a\tb\n", `/a\134b`: `/a\b`, `/a\0`: `/a\0`,
	} {
		if got := unescapeOctal(in); got != want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", in, got, want)
		}
	}
}
