package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// jail is a layer directory dst inside parent inside top, with a sentinel
// file beside parent: everything an escaping layer could touch first.
type jail struct{ top, parent, dst, sentinel string }

func newJail(t *testing.T) jail {
	top := t.TempDir()
	j := jail{top: top, parent: filepath.Join(top, "p"), sentinel: filepath.Join(top, "sentinel")}
	j.dst = filepath.Join(j.parent, "dst")
	must(t, os.WriteFile(j.sentinel, []byte("keep"), 0o644))
	must(t, os.MkdirAll(j.dst, 0o755))
	return j
}

// contained fails t if anything was created or changed outside dst.
func (j jail) contained(t *testing.T) {
	t.Helper()
	if got := names(t, j.parent); !slices.Equal(got, []string{"dst"}) {
		t.Errorf("parent of dst holds %v, want only dst", got)
	}
	if got := names(t, j.top); !slices.Equal(got, []string{"p", "sentinel"}) {
		t.Errorf("top holds %v, want p and sentinel", got)
	}
	if b, err := os.ReadFile(j.sentinel); err != nil || string(b) != "keep" {
		t.Errorf("sentinel outside dst changed: %q %v", b, err)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestUnpackHostile: layers that try to write, link or walk outside their
// directory fail with ErrUnsafeLayer or land inside it, and nothing
// outside changes.
func TestUnpackHostile(t *testing.T) {
	needRoot(t)
	passwd, err := os.ReadFile("/etc/passwd")
	must(t, err)
	dev := func(name string, typ byte) ent { return ent{name: name, typ: typ, mode: 0o666, major: 1, minor: 3} }
	cases := []struct {
		name   string
		ents   func(j jail) []ent
		want   error  // nil: must succeed
		inside string // with want nil: this path exists inside dst
		absent string // this path must not exist inside dst
	}{
		{"dotdot", func(jail) []ent { return []ent{file("../../x", "pwn")} }, nil, "x", ""},
		{"absolute", func(jail) []ent { return []ent{file("/etc/passwd", "pwn")} }, nil, "etc/passwd", ""},
		{"symlink to root, write through", func(jail) []ent {
			return []ent{symlink("evil", "/"), file("evil/etc/sbx-oci-test", "pwn")}
		}, ErrUnsafeLayer, "", ""},
		{"symlink up, write through", func(jail) []ent {
			return []ent{symlink("up", "../../.."), file("up/pwned", "x")}
		}, ErrUnsafeLayer, "", ""},
		{"symlink to parent, mkdir through", func(j jail) []ent {
			return []ent{symlink("out", j.top), dir("out/sub/")}
		}, ErrUnsafeLayer, "", ""},
		{"nested symlink climbing out", func(jail) []ent {
			return []ent{dir("a/"), symlink("a/b", ".."), symlink("c", "a/b/.."), file("c/pwned", "x")}
		}, ErrUnsafeLayer, "", ""},
		{"file replaces symlink", func(j jail) []ent {
			return []ent{symlink("evil", j.sentinel), file("evil", "pwn")}
		}, nil, "evil", ""},
		{"dir replaces symlink", func(j jail) []ent {
			return []ent{symlink("evil", j.top), dir("evil/")}
		}, nil, "evil", ""},
		{"hardlink absolute", func(jail) []ent { return []ent{hardlink("h", "/etc/shadow")} }, ErrUnsafeLayer, "", "h"},
		{"hardlink dotdot", func(jail) []ent { return []ent{hardlink("h", "../outside")} }, ErrUnsafeLayer, "", "h"},
		{"hardlink through symlink", func(jail) []ent {
			return []ent{symlink("evil", "/"), hardlink("h", "evil/etc/passwd")}
		}, ErrUnsafeLayer, "", "h"},
		{"devices skipped", func(jail) []ent {
			return []ent{dev("dev/null", tar.TypeChar), dev("dev/sda", tar.TypeBlock)}
		}, nil, "", "dev/null"},
		{"whiteout of dot", func(jail) []ent { return []ent{file("a/.wh..", "")} }, ErrUnsafeLayer, "", ""},
		{"root as a file", func(jail) []ent { return []ent{file(".", "x")} }, ErrUnsafeLayer, "", ""},
		{"too large", func(jail) []ent { return []ent{file("big", strings.Repeat("x", 40000))} }, ErrTooLarge, "", ""},
		{"inner symlink followed", func(jail) []ent {
			return []ent{dir("usr/lib/"), symlink("lib", "usr/lib"), file("lib/x", "ok")}
		}, nil, "usr/lib/x", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := newJail(t)
			var log bytes.Buffer
			err := Unpack(context.Background(), bytes.NewReader(tarOf(t, c.ents(j)...)), j.dst, 32<<10, &log)
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Unpack = %v, want %v", err, c.want)
			}
			if c.want == nil && err != nil {
				t.Fatalf("Unpack = %v, want success", err)
			}
			j.contained(t)
			if c.inside != "" {
				if _, err := os.Lstat(filepath.Join(j.dst, c.inside)); err != nil {
					t.Errorf("%s not inside dst: %v", c.inside, err)
				}
			}
			if c.absent != "" {
				if _, err := os.Lstat(filepath.Join(j.dst, c.absent)); !os.IsNotExist(err) {
					t.Errorf("%s was created (%v)", c.absent, err)
				}
			}
		})
	}
	if b, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(b, passwd) {
		t.Fatal("/etc/passwd changed")
	}
	if _, err := os.Lstat("/etc/sbx-oci-test"); !os.IsNotExist(err) {
		t.Fatal("/etc/sbx-oci-test created")
	}
}

// TestUnpackReplacedSymlinkNotFollowed: a file entry over a symlink to a
// file outside replaces the link; the outside file keeps its content.
func TestUnpackReplacedSymlinkNotFollowed(t *testing.T) {
	needRoot(t)
	j := newJail(t)
	data := tarOf(t, symlink("evil", j.sentinel), file("evil", "mine"))
	must(t, Unpack(context.Background(), bytes.NewReader(data), j.dst, 1<<20, nil))
	if b, err := os.ReadFile(filepath.Join(j.dst, "evil")); err != nil || string(b) != "mine" {
		t.Fatalf("evil = %q %v", b, err)
	}
	j.contained(t)
}

// TestUnpackDevicesLogged: skipped device nodes are reported on the log.
func TestUnpackDevicesLogged(t *testing.T) {
	needRoot(t)
	j := newJail(t)
	var log bytes.Buffer
	data := tarOf(t, ent{name: "dev/null", typ: tar.TypeChar, mode: 0o666, major: 1, minor: 3})
	must(t, Unpack(context.Background(), bytes.NewReader(data), j.dst, 1<<20, &log))
	if !strings.Contains(log.String(), "skipped device node dev/null (1:3)") {
		t.Fatalf("log = %q", log.String())
	}
}

// TestUnpackCanceled: a done context stops the unpack.
func TestUnpackCanceled(t *testing.T) {
	j := newJail(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Unpack(ctx, bytes.NewReader(tarOf(t, file("a", "b"))), j.dst, 1<<20, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Unpack = %v, want context.Canceled", err)
	}
}

// TestUnpackTooLargeDeclared: an entry declaring more content than the
// limit is ErrTooLarge before anything is written, though its stream is small.
func TestUnpackTooLargeDeclared(t *testing.T) {
	needRoot(t)
	j := newJail(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must(t, tw.WriteHeader(&tar.Header{Name: "huge", Typeflag: tar.TypeReg, Size: 1 << 40, Mode: 0o644}))
	err := Unpack(context.Background(), &buf, j.dst, 1<<20, nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Unpack = %v, want ErrTooLarge", err)
	}
	if _, err := os.Lstat(filepath.Join(j.dst, "huge")); !os.IsNotExist(err) {
		t.Fatal("huge was created")
	}
}
