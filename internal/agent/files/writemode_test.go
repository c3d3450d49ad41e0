package files

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNewFileOneAttributeChange: a file an upload creates gets FileMode
// without a chmod when open(2) already gave it that (user's writes run with
// identity.UserUmask, 022; root's with the agent's, Debian's 022), so its
// only attribute change is the owner's chown and a watcher sees CREATE,
// CHMOD, WRITE, as E2B's python test_watch.py asserts of envd. A file the
// umask left narrower is still chmodded to FileMode. Before, every new file
// was chowned and then chmodded: two attribute changes, which gVisor's
// inotify reported as two CHMOD events when the watcher had read the first.
func TestNewFileOneAttributeChange(t *testing.T) {
	e := newEnv(t)
	var calls int
	defer func(f func(*os.File, os.FileMode) error) { chmod = f }(chmod)
	chmod = func(f *os.File, m os.FileMode) error { calls++; return f.Chmod(m) }
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	name := filepath.Join(e.home, "new.txt")
	if status, _, resp := do(t, "POST", e.url+"/files?username=user&path="+name, octet, reader("x")); status != 200 {
		t.Fatalf("upload: %d %s", status, resp)
	}
	if _, mode := ownerOf(t, name); mode != 0o644 || calls != 0 {
		t.Errorf("new file: mode %v after %d chmods, want 0644 after none", mode, calls)
	}
	narrow := filepath.Join(e.dir, "narrow")
	f, err := os.OpenFile(narrow, os.O_CREATE|os.O_WRONLY, 0o600)
	must(t, err)
	defer f.Close()
	must(t, ensureMode(f))
	if _, mode := ownerOf(t, narrow); mode != 0o644 || calls != 1 {
		t.Errorf("a narrower file: mode %v after %d chmods, want 0644 after one", mode, calls)
	}
}
