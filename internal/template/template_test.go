package template

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestShift(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "suid"), []byte("x"), 0o755)
	os.Chmod(filepath.Join(src, "suid"), 0o755|os.ModeSetuid)
	os.Mkdir(filepath.Join(src, "home"), 0o755)
	os.WriteFile(filepath.Join(src, "home", "f"), []byte("y"), 0o644)
	os.Chown(filepath.Join(src, "home", "f"), 1000, 1000)
	os.Link(filepath.Join(src, "home", "f"), filepath.Join(src, "hard"))
	os.Symlink("/etc/passwd", filepath.Join(src, "link"))
	dst := filepath.Join(t.TempDir(), "out")
	if err := ShiftCopy(context.Background(), src, dst, 100000); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) (uint32, uint32, os.FileMode) {
		fi, err := os.Lstat(filepath.Join(dst, p))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		return st.Uid, st.Gid, fi.Mode()
	}
	if u, g, m := owner("suid"); u != 100000 || g != 100000 || m&os.ModeSetuid == 0 {
		t.Errorf("suid: %d:%d %v (setuid must survive)", u, g, m)
	}
	if u, _, _ := owner("home/f"); u != 101000 {
		t.Errorf("home/f uid %d, want 101000 (hardlink shifted once)", u)
	}
	if u, _, _ := owner("link"); u != 100000 {
		t.Errorf("symlink uid %d", u)
	}
	if fi, _ := os.Stat("/etc/passwd"); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatal("symlink target was followed")
	}
	if u, _, _ := owner("."); u != 100000 {
		t.Errorf("root dir uid %d", u)
	}
}

func TestGetUnknownAndNames(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	for _, n := range []string{"nope", "../etc", "", ".build-x"} {
		if _, err := s.Get(n); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v", n, err)
		}
	}
	if _, err := s.Build(context.Background(), "no-such-def", &bytes.Buffer{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Build unknown = %v", err)
	}
}

// TestBuildBase builds the real base template from a seed tree (the
// debootstrap output the install script caches) and checks what users rely on.
func TestBuildBase(t *testing.T) {
	seed := os.Getenv("SBX_TEMPLATE_SEED")
	if seed == "" {
		seed = "/var/lib/sbx-cache/base-rootfs"
	}
	if _, err := os.Stat(filepath.Join(seed, "usr/bin/python3")); os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and a debootstrapped seed tree")
	}
	s := &Store{Dir: t.TempDir(), UIDBase: 100000, Seed: seed}
	var log bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Build(ctx, "base", &log); err == nil {
		t.Fatal("cancelled build succeeded")
	}
	if ents, _ := os.ReadDir(s.Dir); len(ents) != 0 {
		t.Fatalf("interrupted build left %v", ents)
	}
	tm, err := s.Build(context.Background(), "base", &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	out, err := exec.Command("chroot", tm.Rootfs, "/bin/bash", "-lc", "id user; getent passwd user | cut -d: -f6; python --version; node -v; sudo -l -U user | tail -1").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"uid=1000(user) gid=1000(user)", "/home/user", "Python 3", "v18", "NOPASSWD: ALL"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("%q missing from %s", want, out)
		}
	}
	if fi, err := os.Stat(filepath.Join(tm.RootfsUserNS, "home/user")); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 101000 {
		t.Errorf("userns tree not shifted: %v", err)
	}
	again, err := s.Build(context.Background(), "base", &log)
	if err != nil || again.Created != tm.Created {
		t.Fatal("second Build did not return the cached template")
	}
	if l, _ := s.List(); len(l) != 1 {
		t.Fatalf("List = %v", l)
	}
}
