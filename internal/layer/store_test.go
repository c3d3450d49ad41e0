package layer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestStore(t *testing.T) {
	needRoot(t)
	s, err := New(filepath.Join(t.TempDir(), "sandboxes"))
	must(t, err)
	t.Cleanup(func() { _ = s.Remove("abc123") })
	for _, bad := range []string{"", "../evil", "a/b", "a.b", "a,b"} {
		if _, err := s.Prepare(context.Background(), bad, newLower(t), 1<<20, 0); err == nil {
			t.Errorf("id %q accepted", bad)
		}
	}
	rootfs, err := s.Prepare(context.Background(), "abc123", newLower(t), 1<<20, 100000)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Rootfs("abc123"); !ok || got != rootfs {
		t.Fatalf("Rootfs = %q %v, want %q", got, ok, rootfs)
	}
	if ids, _ := s.List(); len(ids) != 1 || ids[0] != "abc123" {
		t.Fatalf("List = %v", ids)
	}
	must(t, s.Remove("abc123"))
	must(t, s.Remove("abc123"))
	if _, ok := s.Rootfs("abc123"); ok {
		t.Fatal("still mounted")
	}
	if ents, _ := os.ReadDir(s.Dir); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// BenchmarkPrepareRemove measures a layer's whole life on the host: tmpfs +
// overlay mounts, then teardown.
func BenchmarkPrepareRemove(b *testing.B) {
	needRoot(b)
	lower, parent := newLower(b), b.TempDir()
	for i := 0; b.Loop(); i++ {
		l, err := Prepare(filepath.Join(parent, "l"), lower, Options{DiskBytes: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Remove(); err != nil {
			b.Fatal(err)
		}
	}
}
