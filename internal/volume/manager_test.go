package volume

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sbx-dev/sbx/internal/store"
)

func TestMain(m *testing.M) {
	RunHolderIfAsked() // the idmap user namespace holder re-executes this binary
	os.Exit(m.Run())
}

// needHost skips a test that mounts filesystems unless it can (root,
// mkfs.ext4); under CI=true it fails instead.
func needHost(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("mkfs.ext4")
	if os.Geteuid() == 0 && err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("volume tests need root and mkfs.ext4")
	}
	t.Skip("needs root and mkfs.ext4")
}

func newManager(t *testing.T, st *store.Store, dir string, totalMB int64) *Manager {
	t.Helper()
	m, err := Open(context.Background(), Config{Dir: dir, DefaultSizeMB: 16, MaxSizeMB: 64, TotalMB: totalMB, UIDBase: 100000},
		st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// cleanupVolumes unmounts whatever a test left mounted under dir.
func cleanupVolumes(t *testing.T, m *Manager, st *store.Store) {
	t.Cleanup(func() {
		vols, _ := st.Volumes(context.Background(), "", true)
		for _, v := range vols {
			_ = m.destroy(v.ID)
		}
		m.Close()
	})
}

// TestQuota: the size is a hard bound for every writer (the filesystem is
// the volume's size), and the node's total bounds the sum at create.
func TestQuota(t *testing.T) {
	needHost(t)
	ctx := context.Background()
	st := newStore(t)
	m := newManager(t, st, t.TempDir(), 40)
	cleanupVolumes(t, m, st)
	v, err := m.Create(ctx, "", "small", 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, "", "big", 32); !errors.Is(err, ErrQuota) {
		t.Errorf("create past the node total = %v, want ErrQuota", err)
	}
	if _, err := m.Create(ctx, "", "huge", 65); !errors.Is(err, ErrInvalid) {
		t.Errorf("create past the per-volume max = %v, want ErrInvalid", err)
	}
	if _, err := m.Create(ctx, "", "small", 8); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate name = %v, want ErrExists", err)
	}
	r, err := OpenRoot(m.Data(v.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Write("/big", bytes.NewReader(make([]byte, 20<<20)), Meta{})
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("writing 20 MiB into a 16 MiB volume = %v, want ErrNoSpace", err)
	}
	if es, _ := r.List("/", 1); len(es) != 0 {
		t.Errorf("a failed write left %d entries (%v)", len(es), es[0].Name)
	}
	// A direct writer (as a sandbox is) hits the same wall.
	f, err := os.Create(filepath.Join(m.Data(v.ID), "direct"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(make([]byte, 20<<20))
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("direct write past the quota = %v, want ENOSPC", err)
	}
}

// TestRestartAndDelete: a volume's files survive the manager (daemon)
// going away and its mount with it; a used volume is not deleted.
func TestRestartAndDelete(t *testing.T) {
	needHost(t)
	ctx := context.Background()
	st, dir := newStore(t), t.TempDir()
	m := newManager(t, st, dir, 100)
	v, err := m.Create(ctx, "", "keep", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.Data(v.ID), "f"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Ensure(ctx, []string{v.ID}, true); err != nil {
		t.Fatalf("idmapped view: %v", err)
	}
	var fst syscall.Stat_t
	if err := syscall.Stat(filepath.Join(m.Source(v.ID, true), "."), &fst); err != nil || fst.Uid != 100000+DefaultUID {
		t.Errorf("idmapped view shows the root as uid %d (%v), want %d", fst.Uid, err, 100000+DefaultUID)
	}
	m.Close()
	for _, d := range []string{m.Source(v.ID, true), m.Data(v.ID)} {
		if err := unmount(d); err != nil {
			t.Fatal(err)
		}
	}
	m = newManager(t, st, dir, 100)
	cleanupVolumes(t, m, st)
	if b, err := os.ReadFile(filepath.Join(m.Data(v.ID), "f")); err != nil || string(b) != "kept" {
		t.Fatalf("after reopen: %q, %v", b, err)
	}
	busy := func(string) []string { return []string{"sbx1"} }
	if err := m.Delete(ctx, "", v.ID, busy); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "sbx1") {
		t.Errorf("delete of a used volume = %v, want ErrInUse naming sbx1", err)
	}
	if err := m.Delete(ctx, "", v.ID, func(string) []string { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, v.ID)); !os.IsNotExist(err) {
		t.Errorf("deleted volume's directory remains: %v", err)
	}
	if err := m.Delete(ctx, "", v.ID, busy); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete = %v, want ErrNotFound", err)
	}
	if err := m.Ensure(ctx, []string{v.ID}, false); !errors.Is(err, ErrNotFound) {
		t.Errorf("Ensure of a deleted volume = %v, want ErrNotFound", err)
	}
}
