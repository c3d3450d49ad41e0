package layer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPrepareQuotaRemove(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	lower := t.TempDir()
	os.WriteFile(filepath.Join(lower, "base.txt"), []byte("template"), 0o644)
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rootfs, err := s.Prepare(context.Background(), "abc123", lower, 8<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Remove("abc123") })
	if b, _ := os.ReadFile(filepath.Join(rootfs, "base.txt")); string(b) != "template" {
		t.Fatalf("lower not visible: %q", b)
	}
	os.WriteFile(filepath.Join(rootfs, "base.txt"), []byte("changed"), 0o644)
	if b, _ := os.ReadFile(filepath.Join(lower, "base.txt")); string(b) != "template" {
		t.Fatal("write reached the template")
	}
	if err := unix.Setxattr(filepath.Join(rootfs, "base.txt"), "user.e2b.k", []byte("v"), 0); err != nil {
		t.Fatalf("user xattrs on the layer: %v", err)
	}
	f, _ := os.Create(filepath.Join(rootfs, "big"))
	_, werr := f.Write(make([]byte, 16<<20))
	f.Close()
	if !errors.Is(werr, unix.ENOSPC) {
		t.Fatalf("write past quota = %v, want ENOSPC", werr)
	}
	if got, ok := s.Rootfs("abc123"); !ok || got != rootfs {
		t.Fatal("Rootfs does not find the mounted layer")
	}
	if ids, _ := s.List(); len(ids) != 1 {
		t.Fatalf("List = %v", ids)
	}
	if err := s.Remove("abc123"); err != nil {
		t.Fatal(err)
	}
	if mounted(rootfs) || mounted(filepath.Dir(rootfs)+"/layer") {
		t.Fatal("still mounted")
	}
	if _, err := os.Stat(filepath.Dir(rootfs)); !os.IsNotExist(err) {
		t.Fatal("directory left")
	}
	if err := s.Remove("abc123"); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
}

func TestPrepareFailureLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	s, _ := New(t.TempDir())
	if _, err := s.Prepare(context.Background(), "x1", "/nonexistent-lower", 1<<20, 0); err == nil {
		t.Fatal("Prepare over a missing lower succeeded")
	}
	if ids, _ := s.List(); len(ids) != 0 {
		t.Fatalf("left %v", ids)
	}
	if _, err := s.Prepare(context.Background(), "../evil", t.TempDir(), 1<<20, 0); err == nil {
		t.Fatal("path-like id accepted")
	}
}
