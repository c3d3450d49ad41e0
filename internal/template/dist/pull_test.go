package dist

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// TestPushPullRoundTrip: a node with no layers pulls a pushed build and
// gets the same trees (whiteout, opaque dir, hardlink, symlink, setuid,
// owners, xattrs), owned by its store owner; a second pull fetches nothing.
func TestPushPullRoundTrip(t *testing.T) {
	requireRoot(t)
	r := pushed(t)
	b := emptyStore(t)
	n, err := r.remote(b).Pull(context.Background(), meta())
	if err != nil || n != 2 {
		t.Fatalf("pull: n=%d err=%v", n, err)
	}
	root := b.Path(idB)
	checks := []struct {
		name string
		ok   func() bool
	}{
		{"whiteout is a 0:0 char device", func() bool {
			st := stat(t, filepath.Join(root, "etc/gone"))
			return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
		}},
		{"opaque dir", func() bool { return opaque(filepath.Join(root, "etc/old")) }},
		{"hardlink", func() bool {
			return stat(t, filepath.Join(root, "app")).Ino == stat(t, filepath.Join(root, "app2")).Ino
		}},
		{"setuid", func() bool { return stat(t, filepath.Join(root, "app")).Mode&0o7777 == 0o4755 }},
		{"content", func() bool {
			got, _ := os.ReadFile(filepath.Join(root, "app"))
			return bytes.Equal(got, bytes.Repeat([]byte("sbx"), 10000))
		}},
		{"symlink kept", func() bool { l, _ := os.Readlink(filepath.Join(root, "link")); return l == "/etc/passwd" }},
		{"owner", func() bool { st := stat(t, filepath.Join(root, "mine")); return st.Uid == 1000 && st.Gid == 1001 }},
		{"xattr", func() bool { return xattrs(filepath.Join(root, "mine"))["SCHILY.xattr.user.k"] == "v" }},
		{"lower layer", func() bool { _, err := os.Stat(filepath.Join(b.Path(idA), "etc/old/x")); return err == nil }},
		{"used by owner", func() bool { return b.Owned(idA) && b.Owned(idB) }},
		{"size recorded", func() bool { return b.Size(idB) > 30000 }},
	}
	for _, c := range checks {
		if !c.ok() {
			t.Errorf("%s: no", c.name)
		}
	}
	n, err = r.remote(b).Pull(context.Background(), meta())
	if err != nil || n != 0 {
		t.Fatalf("second pull: n=%d err=%v, want 0 from the cache", n, err)
	}
}

// TestPullConcurrentOnce: two pulls racing fetch each layer blob once.
func TestPullConcurrentOnce(t *testing.T) {
	requireRoot(t)
	r := pushed(t)
	r.gets = map[string]int{}
	b := emptyStore(t)
	var wg sync.WaitGroup
	ns := make([]int, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); ns[i], errs[i] = r.remote(b).Pull(context.Background(), meta()) }()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || ns[0]+ns[1] != 2 {
		t.Fatalf("pulls: n=%v errs=%v, want 2 layers pulled in all", ns, errs)
	}
	total := 0
	for p, c := range r.gets {
		total += c
		if c > 2 {
			t.Errorf("blob %s fetched %d times", p, c)
		}
	}
	if total > 4 { // the config twice, each layer once
		t.Errorf("%d blob GETs, want at most 4: %v", total, r.gets)
	}
}

// TestPullFailures: content failing its digest is refused, and a failed
// pull leaves no partial layer; errors name the registry.
func TestPullFailures(t *testing.T) {
	requireRoot(t)
	flip := func(b []byte) []byte { c := bytes.Clone(b); c[len(c)/2] ^= 0xff; return c }
	cases := []struct {
		name    string
		bad     func(h v1.Hash, b []byte) []byte
		meta    func(m Meta) Meta
		keepA   bool // the first layer may be kept (complete, verified)
		wantErr error
	}{
		{name: "digest mismatch", bad: func(_ v1.Hash, b []byte) []byte {
			if len(b) > 200 { // layers, not the config
				return flip(b)
			}
			return b
		}},
		{name: "truncated second layer", bad: func() func(v1.Hash, []byte) []byte {
			n := 0
			var mu sync.Mutex
			return func(_ v1.Hash, b []byte) []byte {
				mu.Lock()
				defer mu.Unlock()
				if len(b) > 200 {
					if n++; n == 2 {
						return b[:len(b)/2]
					}
				}
				return b
			}
		}(), keepA: true},
		{name: "another stack", meta: func(m Meta) Meta { m.Layers = []string{idB, idA}; return m }, wantErr: ErrMismatch},
		{name: "unknown build", meta: func(m Meta) Meta { m.BuildID = "nope"; return m }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := pushed(t)
			r.bad = c.bad
			m := meta()
			if c.meta != nil {
				m = c.meta(m)
			}
			b := emptyStore(t)
			rm := r.remote(b)
			_, err := rm.Pull(context.Background(), m)
			if err == nil {
				t.Fatal("pull succeeded")
			}
			if !bytes.Contains([]byte(err.Error()), []byte(rm.Repo)) {
				t.Errorf("error does not name the registry: %v", err)
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("err %v, want %v", err, c.wantErr)
			}
			if b.Has(idB) || (!c.keepA && b.Has(idA)) {
				t.Errorf("layers left: A=%v B=%v", b.Has(idA), b.Has(idB))
			}
			if l := leftovers(t, b); len(l) > 0 {
				t.Errorf("partial layers left: %v", l)
			}
		})
	}
}

// TestPushMissingLayer: a build whose layer is gone is refused before any
// upload.
func TestPushMissingLayer(t *testing.T) {
	requireRoot(t)
	r := newReg(t)
	m := meta()
	m.Layers = append(m.Layers, "cccccccccccccccccccccccc")
	if _, err := r.remote(built(t)).Push(context.Background(), m); err == nil {
		t.Fatal("pushed a build with a missing layer")
	}
}

// TestPullPinnedDigest: a pull pinned to the pushed digest gets that image
// even after the tag was moved to another; unpinned, the moved tag's image
// (another stack) is refused.
func TestPullPinnedDigest(t *testing.T) {
	requireRoot(t)
	r := newReg(t)
	a := built(t)
	d, err := r.remote(a).Push(context.Background(), meta())
	if err != nil {
		t.Fatal(err)
	}
	other := meta()
	other.Layers = []string{idA}
	if _, err := r.remote(a).Push(context.Background(), other); err != nil { // same tag, another image
		t.Fatal(err)
	}
	if _, err := r.remote(emptyStore(t)).Pull(context.Background(), meta()); !errors.Is(err, ErrMismatch) {
		t.Fatalf("unpinned pull of a moved tag: %v, want ErrMismatch", err)
	}
	m := meta()
	m.Digest = d
	if n, err := r.remote(emptyStore(t)).Pull(context.Background(), m); err != nil || n != 2 {
		t.Fatalf("pinned pull: n=%d err=%v", n, err)
	}
	m.Digest = "sha256:" + strings.Repeat("0", 64)
	if _, err := r.remote(emptyStore(t)).Pull(context.Background(), m); err == nil {
		t.Fatal("pull of an unknown digest succeeded")
	}
}
