package layer

import (
	"os"
	"path/filepath"
	"testing"
)

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (mounts)")
	}
}

// newLower makes a small template tree: a file, a directory with a file.
func newLower(t testing.TB) string {
	t.Helper()
	lower := t.TempDir()
	must(t, os.Chmod(lower, 0o755))
	must(t, os.WriteFile(filepath.Join(lower, "base.txt"), []byte("template"), 0o644))
	must(t, os.MkdirAll(filepath.Join(lower, "home", "user"), 0o755))
	must(t, os.Chown(filepath.Join(lower, "home", "user"), 1000, 1000))
	must(t, os.Mkdir(filepath.Join(lower, "dir"), 0o755))
	must(t, os.WriteFile(filepath.Join(lower, "dir", "f"), []byte("f"), 0o644))
	return lower
}

// newDir returns a layer path under a fresh parent and reaps it at the end,
// whatever the test did.
func newDir(t testing.TB) string {
	t.Helper()
	parent := t.TempDir()
	for _, p := range []string{parent, filepath.Dir(parent)} { // traversable by uid 1000
		must(t, os.Chmod(p, 0o711))
	}
	dir := filepath.Join(parent, "sbx1")
	t.Cleanup(func() {
		if err := Cleanup(dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return dir
}

// assertGone checks that nothing is mounted under dir and dir is gone.
func assertGone(t testing.TB, dir string) {
	t.Helper()
	dir, _ = realPath(dir)
	if mps, _ := mountsUnder(dir); len(mps) > 0 {
		t.Errorf("still mounted: %v", mps)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left behind (%v)", dir, err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
