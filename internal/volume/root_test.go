package volume

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newRoot is a Root over a temp "volume" beside a secret file outside it.
func newRoot(t *testing.T) (*Root, string, string) {
	t.Helper()
	base := t.TempDir()
	vol := filepath.Join(base, "vol")
	secret := filepath.Join(base, "secret")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(vol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, vol, secret
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{"/a/b": "/a/b", "a/b": "/a/b", "/../../etc": "/etc", "/a/./b/..": "/a", "/": "/"} {
		if got, err := Clean(in); err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a\x00b", strings.Repeat("a", 4097)} {
		if _, err := Clean(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("Clean(%q) = %v, want ErrInvalid", trunc(in), err)
		}
	}
}

// TestRootEscapes plants what a hostile sandbox could leave in a volume
// and checks that no content call reads, writes, re-owns or removes
// anything outside the volume through it.
func TestRootEscapes(t *testing.T) {
	r, vol, secret := newRoot(t)
	for name, target := range map[string]string{
		"abs": secret, "rel": "../secret", "dir": "..", "root": "/", "deep": "../../../../../../" + strings.TrimPrefix(secret, "/"),
	} {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/abs", "/rel", "/dir/secret", "/root" + secret, "/deep", "/../secret", "/dir/../secret"} {
		if f, _, err := r.Open(p); err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			t.Errorf("Open(%s) read %q from outside the volume", p, b)
		}
	}
	for _, p := range []string{"/dir/pwned", "/root/tmp/pwned", "/rel"} {
		_, _ = r.Write(p, strings.NewReader("x"), Meta{})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(vol), "pwned")); err == nil {
		t.Error("a write through a symlink landed outside the volume")
	}
	if b, _ := os.ReadFile(secret); string(b) != "host secret" {
		t.Errorf("host file changed to %q", b)
	}
	if st, err := os.Lstat(filepath.Join(vol, "rel")); err != nil || st.Mode()&os.ModeSymlink != 0 {
		t.Errorf("write to /rel: want the symlink replaced by a file in the volume, got %v %v", st, err)
	}
	uid := uint32(4242)
	_, _ = r.SetMeta("/abs", Meta{UID: &uid})
	_, _ = r.SetMeta("/dir", Meta{UID: &uid})
	var st syscall.Stat_t
	if err := syscall.Stat(secret, &st); err != nil || st.Uid == uid {
		t.Errorf("SetMeta through a symlink re-owned the host file (uid %d, %v)", st.Uid, err)
	}
	if err := r.Remove("/dir"); err != nil {
		t.Fatalf("Remove(/dir): %v", err)
	}
	if err := r.Remove("/root"); err != nil {
		t.Fatalf("Remove(/root): %v", err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("removing symlinks removed their targets: %v", err)
	}
	if err := r.Remove("/"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Remove(/) = %v, want ErrInvalid", err)
	}
}

func TestRootOps(t *testing.T) {
	r, vol, _ := newRoot(t)
	mode := uint32(0o640)
	e, err := r.Write("/a/b/c.txt", strings.NewReader("hello"), Meta{Mode: &mode})
	if err != nil || e.Type != "file" || e.Size != 5 || e.Mode != 0o640 || e.Path != "/a/b/c.txt" || e.Name != "c.txt" {
		t.Fatalf("Write = %+v, %v", e, err)
	}
	f, n, err := r.Open("/a/b/c.txt")
	if err != nil || n != 5 {
		t.Fatalf("Open = %d, %v", n, err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "hello" {
		t.Errorf("read %q", b)
	}
	if _, err := r.Mkdir("/x/y", false, Meta{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Mkdir without parents of a missing parent = %v, want ErrNotFound", err)
	}
	if e, err := r.Mkdir("/x/y", true, Meta{}); err != nil || e.Type != "directory" || e.Mode != 0o755 {
		t.Errorf("Mkdir(parents) = %+v, %v", e, err)
	}
	if _, err := r.Mkdir("/x/y", false, Meta{}); !errors.Is(err, ErrExists) {
		t.Errorf("Mkdir of an existing dir = %v, want ErrExists", err)
	}
	if _, err := r.Mkdir("/x/y", true, Meta{}); err != nil {
		t.Errorf("Mkdir(parents) of an existing dir = %v", err)
	}
	es, err := r.List("/", 3)
	if err != nil || len(es) != 5 { // a, a/b, a/b/c.txt, x, x/y
		t.Errorf("List(/, 3) = %d entries, %v", len(es), err)
	}
	if _, err := r.List("/nope", 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("List(missing) = %v", err)
	}
	if _, _, err := r.Open("/a"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(dir) = %v, want ErrInvalid", err)
	}
	if err := syscall.Mkfifo(filepath.Join(vol, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := r.Open("/fifo"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Open(fifo) = %v, want ErrInvalid", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open of a FIFO hung")
	}
	if err := r.Remove("/a"); err != nil {
		t.Errorf("Remove(dir tree) = %v", err)
	}
	if err := r.Remove("/a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove(missing) = %v, want ErrNotFound", err)
	}
}
