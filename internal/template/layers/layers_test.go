package layers

import (
	"context"
	"errors"
	"os"
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
