package template

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/layer"
)

// integrationStore returns a store for a real build of base: from a seed
// tree (SBX_TEMPLATE_SEED; default a debootstrap cache if there is one, else
// the installed base template's rootfs, which scripts/install.sh builds), or
// with debootstrap from the mirror when SBX_TEMPLATE_DEBOOTSTRAP=1.
func integrationStore(t *testing.T) *Store {
	t.Helper()
	skip := func(msg string) {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI: " + msg)
		}
		t.Skip(msg)
	}
	if testing.Short() {
		t.Skip("-short")
	}
	if os.Geteuid() != 0 {
		skip("needs root")
	}
	s := &Store{Dir: filepath.Join(t.TempDir(), "templates"), UIDBase: testBase}
	if os.Getenv("SBX_TEMPLATE_DEBOOTSTRAP") == "1" {
		if _, err := exec.LookPath("debootstrap"); err != nil {
			skip("debootstrap not installed")
		}
		return s
	}
	s.Seed = os.Getenv("SBX_TEMPLATE_SEED")
	if s.Seed == "" {
		s.Seed = defaultSeed()
	}
	if _, err := os.Stat(filepath.Join(s.Seed, "usr/bin/python3")); err != nil {
		skip("no debootstrapped seed tree at " + s.Seed)
	}
	return s
}

// defaultSeed is the first bookworm tree found on this host.
func defaultSeed() string {
	data := os.Getenv("SBX_DATA_DIR")
	if data == "" {
		data = "/var/lib/sbx"
	}
	for _, p := range []string{"/var/lib/sbx-cache/base-rootfs", filepath.Join(data, "templates/base/rootfs")} {
		if _, err := os.Stat(filepath.Join(p, "usr/bin/python3")); err == nil {
			return p
		}
	}
	return filepath.Join(data, "templates/base/rootfs")
}

func TestBuildBase(t *testing.T) {
	s := integrationStore(t)
	var log bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("build log:\n%s", log.String())
		}
	})
	interruptMidway(t, s)
	start := time.Now()
	tm, err := s.Build(context.Background(), "base", &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built base in %s: %d MiB, %d files", time.Since(start).Round(time.Millisecond), tm.SizeBytes>>20, tm.Files)
	checkMeta(t, tm)
	checkChroot(t, tm)
	checkFiles(t, tm)
	checkUserNS(t, tm)
	checkLayerXattrs(t, tm)
	start = time.Now()
	again, err := s.Build(context.Background(), "base", &log)
	if err != nil || again.BuildID != tm.BuildID || time.Since(start) > time.Second {
		t.Fatalf("second Build = %+v, %v after %s; want the cached template at once", again, err, time.Since(start))
	}
	if l, err := s.List(); err != nil || len(l) != 1 || l[0].Name != "base" {
		t.Fatalf("List = %v, %v", l, err)
	}
}

// interruptMidway cancels a build while it copies and checks that nothing
// of it is left.
func interruptMidway(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := s.Build(ctx, "base", &bytes.Buffer{}); err == nil {
		t.Fatal("interrupted build succeeded")
	}
	ents, _ := os.ReadDir(s.Dir)
	for _, e := range ents {
		if e.Name() != ".lock" {
			t.Fatalf("interrupted build left %s", e.Name())
		}
	}
}

func checkMeta(t *testing.T, tm *Template) {
	t.Helper()
	if tm.EnvdVersion != EnvdVersion || tm.UIDBase != testBase || len(tm.BuildID) != 16 ||
		!strings.HasPrefix(tm.Digest, "sha256:") || tm.SizeBytes < 100<<20 || tm.Files < 1000 {
		t.Errorf("metadata: %+v", tm)
	}
}

// checkChroot runs what users' code relies on, in the built tree.
func checkChroot(t *testing.T, tm *Template) {
	t.Helper()
	script := `id user; getent passwd user | cut -d: -f6,7; getent passwd root | cut -d: -f6
python --version; python3 -c 'import json, sqlite3; print("py ok")'; node -v; git --version; curl --version | head -1
TERM=xterm tput cols; sudo -l -U user | tail -1; command -v ps >/dev/null && echo ps ok; locale -a | grep -i c.utf; echo "$LANG"`
	out, err := exec.Command("chroot", tm.Rootfs, "/bin/bash", "-lc", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"uid=1000(user) gid=1000(user)", "/home/user:/bin/bash", "/root", "Python 3.11",
		"py ok", "v18", "git version", "curl 7", "80", "NOPASSWD: ALL", "ps ok", "C.utf8", "C.UTF-8"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("%q missing from:\n%s", want, out)
		}
	}
}

func checkFiles(t *testing.T, tm *Template) {
	t.Helper()
	for _, tc := range []struct {
		path string
		mode os.FileMode
		uid  uint32
	}{
		{".sbx", os.ModeDir | 0o755, 0},
		{"home/user", os.ModeDir | 0o755, 1000},
		{"etc/sudoers.d/user", 0o440, 0},
		{"usr/bin/sudo", 0o755 | os.ModeSetuid, 0},
	} {
		fi, err := os.Lstat(filepath.Join(tm.Rootfs, tc.path))
		if err != nil || fi.Mode() != tc.mode || fi.Sys().(*syscall.Stat_t).Uid != tc.uid {
			t.Errorf("%s: %v %v", tc.path, fi, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(tm.Rootfs, "var/lib/apt/lists")); len(ents) > 1 {
		t.Errorf("apt lists not cleaned: %d entries", len(ents))
	}
	if b, _ := os.ReadFile(filepath.Join(tm.Rootfs, "etc/resolv.conf")); !strings.Contains(string(b), "placeholder") {
		t.Errorf("resolv.conf is the host's: %q", b)
	}
}

func checkUserNS(t *testing.T, tm *Template) {
	t.Helper()
	for _, tc := range []struct {
		path string
		uid  uint32
		mode os.FileMode
	}{
		{".", testBase, os.ModeDir | 0o755},
		{"home/user", testBase + 1000, os.ModeDir | 0o755},
		{"usr/bin/sudo", testBase, 0o755 | os.ModeSetuid},
	} {
		fi, err := os.Lstat(filepath.Join(tm.RootfsUserNS, tc.path))
		if err != nil || fi.Sys().(*syscall.Stat_t).Uid != tc.uid || fi.Mode() != tc.mode {
			t.Errorf("rootfs-userns %s: %v %v", tc.path, fi, err)
		}
	}
}

// checkLayerXattrs: user.* xattrs work under /home/user on a sandbox's layer,
// for the user itself.
func checkLayerXattrs(t *testing.T, tm *Template) {
	t.Helper()
	parent := t.TempDir()
	must(t, os.Chmod(parent, 0o711))
	must(t, os.Chmod(filepath.Dir(parent), 0o711))
	l, err := layer.Prepare(filepath.Join(parent, "sbx"), tm.Rootfs, layer.Options{DiskBytes: 64 << 20})
	must(t, err)
	defer l.Remove()
	script := `cd /home/user && touch f && setfattr -n user.k -v v f && getfattr --only-values -n user.k f`
	out, err := exec.Command("chroot", "--userspec=1000:1000", l.Rootfs, "/bin/bash", "-c", script).CombinedOutput()
	if err != nil || string(out) != "v" {
		t.Errorf("user xattr as user on the layer: %v: %q", err, out)
	}
}
