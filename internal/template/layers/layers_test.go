package layers

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const key = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestEnsureCommitsOnce(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	calls := 0
	fill := func(dir string) error {
		calls++
		return os.WriteFile(filepath.Join(dir, "f"), []byte("hello"), 0o644)
	}
	for range 2 {
		p, err := s.Ensure(context.Background(), key, fill)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(p, "f")); err != nil || string(b) != "hello" {
			t.Fatalf("read %q %v", b, err)
		}
	}
	id, _ := ID(key)
	if calls != 1 || !s.Has(id) || s.Size(id) != 5 {
		t.Fatalf("calls %d, has %v, size %d", calls, s.Has(id), s.Size(id))
	}
	st, err := os.Stat(filepath.Dir(s.Path(id)))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the tree's parent is %v (%v): host users could reach its setuid files", st.Mode(), err)
	}
	ids, _ := s.List()
	if len(ids) != 1 || ids[0] != id {
		t.Fatalf("list %v", ids)
	}
	if err := s.Remove(id); err != nil || s.Has(id) {
		t.Fatalf("remove: %v", err)
	}
}

func TestFailedFillLeavesNothing(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	boom := errors.New("boom")
	if _, err := s.Ensure(context.Background(), key, func(string) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	ents, _ := os.ReadDir(s.Dir)
	if len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

func TestIDAndStale(t *testing.T) {
	for _, bad := range []string{"", "abc", "sha256:../../../etc/passwd/xxxxxxxxxxxxxxxxxxxx", strings.Repeat("Z", 30)} {
		if _, err := ID(bad); err == nil {
			t.Errorf("ID(%q) accepted", bad)
		}
	}
	s := &Store{Dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(s.Dir, ".tmp-x-1", "r", "fs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveStale(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(s.Dir); len(ents) != 0 {
		t.Fatalf("stale left: %v", ents)
	}
	// a write in progress (another process's, on a shared store) is left alone
	key := strings.Repeat("cd", 32)
	filling, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := s.Ensure(t.Context(), key, func(string) error { close(filling); <-release; return nil })
		done <- err
	}()
	<-filling
	if err := (&Store{Dir: s.Dir}).RemoveStale(); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the write in progress failed after another store's RemoveStale: %v", err)
	}
	if id, _ := ID(key); !s.Has(id) {
		t.Fatal("the write in progress was not committed")
	}
}

func TestEnsureUserNS(t *testing.T) {
	shifted := 0
	s := &Store{Dir: t.TempDir(), Shift: func(_ context.Context, src, dst string) error {
		shifted++
		return os.Mkdir(dst, 0o755)
	}}
	if _, err := s.EnsureUserNS(context.Background(), "0123456789abcdef01234567"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing layer: %v", err)
	}
	p, _ := s.Ensure(context.Background(), key, func(string) error { return nil })
	_ = p
	id, _ := ID(key)
	for range 2 {
		if _, err := s.EnsureUserNS(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if shifted != 1 {
		t.Fatalf("shifted %d times", shifted)
	}
}

// Two daemons sharing a store: a layer goes only when the last one
// releases it, and a daemon never releases another's use.
func TestReleaseByLastOwner(t *testing.T) {
	dir := t.TempDir()
	a, b := &Store{Dir: dir, Owner: "a"}, &Store{Dir: dir, Owner: "b"}
	p, err := a.Ensure(context.Background(), key, func(string) error { return nil })
	if err != nil || p == "" {
		t.Fatal(err)
	}
	id, _ := ID(key)
	if err := errors.Join(a.Use(id), b.Use(id)); err != nil {
		t.Fatal(err)
	}
	if !a.Owned(id) || !b.Owned(id) {
		t.Fatal("uses not recorded")
	}
	if removed, err := a.Release(id); err != nil || removed || !b.Has(id) {
		t.Fatalf("first release removed the layer b uses: %v %v", removed, err)
	}
	if removed, err := b.Release(id); err != nil || !removed || a.Has(id) {
		t.Fatalf("last release: removed %v, err %v", removed, err)
	}
	if removed, _ := (&Store{Dir: dir}).Release(id); removed {
		t.Fatal("a store without owner released something")
	}
}

// TestLayerDirPrivate: a layer's directory is 0700 root, also one an older
// store made 0711 once a sandbox uses its fs-userns tree, so no host user
// reaches a setuid file a team's build left in that tree (owned by the
// user-namespace range: it would run as every crun/runc sandbox's root
// uid). Before, the layer was 0711 and fs-userns 0755: a host user ran a
// build's setuid shell as uid 100000.
func TestLayerDirPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown into the user-namespace range, a second uid)")
	}
	dir, err := os.MkdirTemp("", "layers-private-") // its parents open to all, as a data dir's
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Store{Dir: dir, Shift: func(_ context.Context, _, dst string) error {
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		f := filepath.Join(dst, "suid")
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			return err
		}
		if err := os.Chown(f, 100000, 100000); err != nil {
			return err
		}
		return os.Chmod(f, 0o755|os.ModeSetuid|os.ModeSetgid)
	}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(s.Dir, 0o711))
	for _, old := range []bool{false, true} {
		k := key
		if old {
			k = strings.Replace(key, "0123", "4567", 1)
		}
		_, err := s.Ensure(context.Background(), k, func(string) error { return nil })
		must(err)
		id, _ := ID(k)
		if old { // as an older store left it
			must(os.Chmod(filepath.Join(s.Dir, id), 0o711))
		}
		tree, err := s.EnsureUserNS(context.Background(), id)
		must(err)
		fi, err := os.Stat(filepath.Join(s.Dir, id))
		must(err)
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("old store %v: layer dir mode %v, want 0700", old, fi.Mode().Perm())
		}
		out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
			"sh", "-c", `stat -c %A "$0"`, filepath.Join(tree, "suid")).CombinedOutput()
		if err == nil {
			t.Fatalf("old store %v: a host user reached the layer's setuid file: %s", old, out)
		}
	}
}
