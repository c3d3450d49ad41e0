package builder

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

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/layer"
	"github.com/sbx-dev/sbx/internal/template"
	"github.com/sbx-dev/sbx/internal/template/layers"
)

const testUIDBase = 100000

// builtinFixture is an in-process builder of built-ins over a fresh
// templates dir, from a seed tree (SBX_TEMPLATE_SEED, default the installed
// base's Debian tree), or with debootstrap when SBX_TEMPLATE_DEBOOTSTRAP=1.
func builtinFixture(t *testing.T) *Builtin {
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
	dir := filepath.Join(t.TempDir(), "templates")
	b := &Builtin{Templates: &template.Store{Dir: dir}, TmpDir: t.TempDir(), UIDBase: testUIDBase,
		Layers: &layers.Store{Dir: filepath.Join(dir, "layers"), Owner: BuiltinOwner, Shift: func(ctx context.Context, src, dst string) error {
			return template.ShiftCopy(ctx, src, dst, testUIDBase)
		}}}
	if os.Getenv("SBX_TEMPLATE_DEBOOTSTRAP") == "1" {
		return b
	}
	b.Seed = os.Getenv("SBX_TEMPLATE_SEED")
	if b.Seed == "" {
		data := os.Getenv("SBX_DATA_DIR")
		if data == "" {
			data = "/var/lib/sbx"
		}
		b.Seed = filepath.Join(data, "templates/base/rootfs")
	}
	if _, err := os.Stat(filepath.Join(b.Seed, "usr/bin/python3")); err != nil {
		skip("no Debian seed tree at " + b.Seed + " (scripts/install.sh builds base)")
	}
	return b
}

// TestBuiltinBuild builds base by the builder's machinery: an interrupted
// build leaves nothing; a build replaces a registration of the old layout
// (a whole tree, sbx before this builder) and registers the Debian layer
// and the provisioning layer; the merged tree has what users' code relies
// on; the user-namespace copies are shifted; a second build is a cache hit
// in well under a second.
func TestBuiltinBuild(t *testing.T) {
	b := builtinFixture(t)
	var log bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("build log:\n%s", log.String())
		}
	})
	interruptMidway(t, b)
	old := filepath.Join(b.Templates.Dir, "base")
	must(t, os.MkdirAll(filepath.Join(old, "rootfs", "usr"), 0o755))
	must(t, os.WriteFile(filepath.Join(old, "template.json"), []byte(`{"name":"base","digest":"sha256:00"}`), 0o644))
	start := time.Now()
	tm, err := b.Build(context.Background(), template.Definitions["base"], &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built base in %s: %d MiB, layers %v", time.Since(start).Round(time.Millisecond), tm.SizeBytes>>20, tm.Layers)
	if got, err := b.Templates.Get("base"); err != nil || got.BuildID != tm.BuildID || len(got.Layers) != 2 ||
		got.SizeBytes < 100<<20 || got.UIDBase != testUIDBase || got.EnvdVersion != template.EnvdVersion {
		t.Fatalf("registration: %+v, %v", got, err)
	}
	if fi, err := os.Lstat(filepath.Join(old, "rootfs")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("rootfs is not the link to the Debian layer (the old layout's tree is still there?): %v %v", fi, err)
	}
	if l, err := filepath.EvalSymlinks(filepath.Join(old, "rootfs")); err != nil || l != b.Layers.Path(tm.Layers[0]) {
		t.Errorf("rootfs links to %q, %v; want %s", l, err, b.Layers.Path(tm.Layers[0]))
	}
	for _, l := range tm.Layers {
		if !b.Layers.Owned(l) {
			t.Errorf("layer %s is not marked as a built-in's", l)
		}
	}
	root := mergedView(t, b, tm, false)
	checkChroot(t, root)
	checkFiles(t, root)
	checkXattrs(t, b, tm)
	checkUserNS(t, mergedView(t, b, tm, true))
	start = time.Now()
	again, err := b.Build(context.Background(), template.Definitions["base"], &log)
	if err != nil || again.BuildID != tm.BuildID || time.Since(start) > time.Second {
		t.Fatalf("second Build = %+v, %v after %s; want the cached template at once", again, err, time.Since(start))
	}
}

// interruptMidway cancels a build while it copies and checks that nothing
// of it is left.
func interruptMidway(t *testing.T, b *Builtin) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := b.Build(ctx, template.Definitions["base"], &bytes.Buffer{}); err == nil {
		t.Fatal("interrupted build succeeded")
	}
	if ids, _ := b.Layers.List(); len(ids) != 0 {
		t.Fatalf("interrupted build left layers %v", ids)
	}
	ents, _ := os.ReadDir(b.Layers.Dir)
	for _, e := range ents {
		t.Errorf("interrupted build left %s", e.Name())
	}
}

// mergedView mounts tm's stack read-only (its user-namespace copies with
// userns), as sandboxes see it but with devices usable, until the test ends.
func mergedView(t *testing.T, b *Builtin, tm *template.Template, userns bool) string {
	t.Helper()
	lower, err := (&Registry{Layers: b.Layers}).lower(context.Background(), tm.Layers, userns)
	must(t, err)
	mp := t.TempDir()
	must(t, unix.Mount("overlay", mp, "overlay", unix.MS_RDONLY, "lowerdir="+lower))
	t.Cleanup(func() { _ = unix.Unmount(mp, unix.MNT_DETACH) })
	return mp
}

// checkChroot runs what users' code relies on, in the merged tree.
func checkChroot(t *testing.T, root string) {
	t.Helper()
	script := `id user; getent passwd user | cut -d: -f6,7; getent passwd root | cut -d: -f6
python --version; python3 -c 'import json, sqlite3; print("py ok")'; node -v; git --version; curl --version | head -1
TERM=xterm tput cols; sudo -l -U user | tail -1; command -v ps >/dev/null && echo ps ok; locale -a | grep -i c.utf; echo "$LANG"`
	out, err := exec.Command("chroot", root, "/bin/bash", "-lc", script).CombinedOutput()
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

// checkXattrs: user.* xattrs work under /home/user on a sandbox's layer
// over the stack, for the user itself.
func checkXattrs(t *testing.T, b *Builtin, tm *template.Template) {
	t.Helper()
	lower, err := (&Registry{Layers: b.Layers}).lower(context.Background(), tm.Layers, false)
	must(t, err)
	parent := t.TempDir()
	must(t, os.Chmod(parent, 0o711))
	must(t, os.Chmod(filepath.Dir(parent), 0o711))
	l, err := layer.Prepare(filepath.Join(parent, "sbx"), lower, layer.Options{DiskBytes: 64 << 20})
	must(t, err)
	defer l.Remove()
	script := `cd /home/user && touch f && setfattr -n user.k -v v f && getfattr --only-values -n user.k f`
	out, err := exec.Command("chroot", "--userspec=1000:1000", l.Rootfs, "/bin/bash", "-c", script).CombinedOutput()
	if err != nil || string(out) != "v" {
		t.Errorf("user xattr as user on the layer: %v: %q", err, out)
	}
}

func checkFiles(t *testing.T, root string) {
	t.Helper()
	for _, tc := range []struct {
		path string
		mode os.FileMode
		uid  uint32
	}{
		{".sbx", os.ModeDir | 0o755, 0},
		{"home/user", os.ModeDir | 0o755, 1000},
		{"home/user/.bashrc", 0o644, 1000},
		{"etc/sudoers.d/user", 0o440, 0},
		{"usr/bin/sudo", 0o755 | os.ModeSetuid, 0},
	} {
		fi, err := os.Lstat(filepath.Join(root, tc.path))
		if err != nil || fi.Mode() != tc.mode || fi.Sys().(*syscall.Stat_t).Uid != tc.uid {
			t.Errorf("%s: %v %v", tc.path, fi, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "var/lib/apt/lists")); len(ents) > 1 {
		t.Errorf("apt lists not cleaned: %d entries", len(ents))
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/resolv.conf")); !strings.Contains(string(b), "placeholder") {
		t.Errorf("resolv.conf is the host's: %q", b)
	}
}

func checkUserNS(t *testing.T, root string) {
	t.Helper()
	for _, tc := range []struct {
		path string
		uid  uint32
		mode os.FileMode
	}{
		{"home/user", testUIDBase + 1000, os.ModeDir | 0o755},
		{"etc/sudoers.d/user", testUIDBase, 0o440},
		{"usr/bin/sudo", testUIDBase, 0o755 | os.ModeSetuid},
	} {
		fi, err := os.Lstat(filepath.Join(root, tc.path))
		if err != nil || fi.Sys().(*syscall.Stat_t).Uid != tc.uid || fi.Mode() != tc.mode {
			t.Errorf("user-namespace copy %s: %v %v", tc.path, fi, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestBuiltinRecord: the registration carries the definition's defaults
// for its sandboxes and the stack.
func TestBuiltinRecord(t *testing.T) {
	b := &Builtin{Layers: &layers.Store{Dir: t.TempDir()}, UIDBase: testUIDBase}
	def := template.Definitions["code-interpreter-v1"]
	st := &state{layers: []string{"aaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbb"}, key: "k"}
	r := b.record(def, st)
	if r.Name != def.Name || r.MemoryMB != 2048 || r.Runtime != def.Runtime || r.UIDBase != testUIDBase || r.Key != "k" ||
		len(r.Layers) != 2 || len(r.Packages) != len(def.Base)+len(def.Apt) || len(r.BuildID) != 16 {
		t.Errorf("record = %+v", r)
	}
	// a registration is kept only while it serves what the definition says
	for _, tc := range []struct {
		change func(*template.Template)
		want   bool
	}{
		{func(*template.Template) {}, true},
		{func(o *template.Template) { o.BuildID, o.Created = "other", o.Created.Add(-time.Hour) }, true},
		{func(o *template.Template) { o.Key = "older packages" }, false},
		{func(o *template.Template) { o.MemoryMB = 512 }, false},
		{func(o *template.Template) { o.Runtime = "runc" }, false},
	} {
		old := *r
		tc.change(&old)
		if got := upToDate(&old, r); got != tc.want {
			t.Errorf("upToDate(%+v) = %v", old, got)
		}
	}
}
