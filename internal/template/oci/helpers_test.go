package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ent is one tar entry of a test layer.
type ent struct {
	name, body, link string
	typ              byte
	mode             int64
	uid, gid         int
	major, minor     int64
	pax              map[string]string
	mtime            time.Time
}

func file(name, body string) ent { return ent{name: name, body: body, typ: tar.TypeReg, mode: 0o644} }
func dir(name string) ent        { return ent{name: name, typ: tar.TypeDir, mode: 0o755} }
func symlink(name, to string) ent {
	return ent{name: name, link: to, typ: tar.TypeSymlink, mode: 0o777}
}
func hardlink(name, to string) ent { return ent{name: name, link: to, typ: tar.TypeLink, mode: 0o644} }

// tarOf writes ents as a tar stream.
func tarOf(t *testing.T, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		mt := e.mtime
		if mt.IsZero() {
			mt = time.Unix(1700000000, 0)
		}
		hdr := &tar.Header{
			Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode,
			Uid: e.uid, Gid: e.gid, Size: int64(len(e.body)), ModTime: mt,
			Devmajor: e.major, Devminor: e.minor, PAXRecords: e.pax, Format: tar.FormatPAX,
		}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		must(t, tw.WriteHeader(hdr))
		if hdr.Size > 0 {
			_, err := tw.Write([]byte(e.body))
			must(t, err)
		}
	}
	must(t, tw.Close())
	return buf.Bytes()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown, mknod, trusted xattrs, mount)")
	}
}

// testImage is an image of the given architecture with one gzipped layer
// per tar stream and a config the tests check.
func testImage(t *testing.T, arch string, layers ...[]byte) v1.Image {
	t.Helper()
	img := empty.Image
	for _, b := range layers {
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(b)), nil
		})
		must(t, err)
		img, err = mutate.AppendLayers(img, l)
		must(t, err)
	}
	cf, err := img.ConfigFile()
	must(t, err)
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config = v1.Config{Env: []string{"PATH=/bin", "ARCH=" + arch}, WorkingDir: "/app",
		User: "1000:1000", Entrypoint: []string{"/bin/sh"}, Cmd: []string{"-c", "true"}}
	img, err = mutate.ConfigFile(img, cf)
	must(t, err)
	return img
}

// testIndex is an index of the images by architecture.
func testIndex(t *testing.T, imgs map[string]v1.Image) v1.ImageIndex {
	var idx v1.ImageIndex = empty.Index
	for arch, img := range imgs {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return idx
}

// newRegistry serves an in-memory registry on loopback, wrapped by wrap
// (may be nil), and returns its host:port.
func newRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func push(t *testing.T, ref string, img v1.Image, opts ...remote.Option) {
	t.Helper()
	r, err := name.ParseReference(ref)
	must(t, err)
	must(t, remote.Write(r, img, opts...))
}

func pushIndex(t *testing.T, ref string, idx v1.ImageIndex, opts ...remote.Option) {
	t.Helper()
	r, err := name.ParseReference(ref)
	must(t, err)
	must(t, remote.WriteIndex(r, idx, opts...))
}

// countingStore is a DirStore counting fill calls per key.
type countingStore struct {
	DirStore
	mu    sync.Mutex
	fills map[string]int
}

func newStore(t *testing.T) *countingStore {
	return &countingStore{DirStore: DirStore{Dir: t.TempDir()}, fills: map[string]int{}}
}

func (s *countingStore) Ensure(ctx context.Context, key string, fill func(string) error) (string, error) {
	return s.DirStore.Ensure(ctx, key, func(dir string) error {
		s.mu.Lock()
		s.fills[key]++
		s.mu.Unlock()
		return fill(dir)
	})
}

func (s *countingStore) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.fills {
		n += c
	}
	return n
}
