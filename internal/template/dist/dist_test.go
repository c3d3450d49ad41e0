package dist

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/template/layers"
)

// Two layers: the second holds a whiteout, an opaque dir, a hardlink, a
// symlink, a setuid file and an owner other than root.
var (
	keyA = strings.Repeat("a", 64)
	keyB = strings.Repeat("b", 64)
	idA  = keyA[:24]
	idB  = keyB[:24]
)

func fillA(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "etc", "old"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "etc", "gone"), []byte("bye"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "etc", "old", "x"), []byte("x"), 0o644)
}

func fillB(dir string) error {
	etc := filepath.Join(dir, "etc")
	steps := []func() error{
		func() error { return os.MkdirAll(filepath.Join(etc, "old"), 0o755) },
		func() error {
			return unix.Setxattr(filepath.Join(etc, "old"), "trusted.overlay.opaque", []byte("y"), 0)
		},
		func() error { return unix.Mknod(filepath.Join(etc, "gone"), unix.S_IFCHR, 0) },
		func() error {
			return os.WriteFile(filepath.Join(dir, "app"), bytes.Repeat([]byte("sbx"), 10000), 0o755)
		},
		func() error { return os.Chmod(filepath.Join(dir, "app"), 0o4755|fs.ModeSetuid) },
		func() error { return os.Link(filepath.Join(dir, "app"), filepath.Join(dir, "app2")) },
		func() error { return os.Symlink("/etc/passwd", filepath.Join(dir, "link")) },
		func() error { return os.WriteFile(filepath.Join(dir, "mine"), []byte("u"), 0o600) },
		func() error { return os.Lchown(filepath.Join(dir, "mine"), 1000, 1001) },
		func() error { return unix.Setxattr(filepath.Join(dir, "mine"), "user.k", []byte("v"), 0) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("layer round trips need root (owners, whiteouts, trusted xattrs)")
		}
		t.Skip("needs root")
	}
}

// built is a layer store holding the two layers, as after a build.
func built(t *testing.T) *layers.Store {
	t.Helper()
	s := &layers.Store{Dir: filepath.Join(t.TempDir(), "layers"), Owner: "node-a"}
	for k, f := range map[string]func(string) error{keyA: fillA, keyB: fillB} {
		if _, err := s.Ensure(context.Background(), k, f); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// reg is an in-process registry whose blob reads go through get.
type reg struct {
	srv  *httptest.Server
	mu   sync.Mutex
	gets map[string]int // blob path → GETs
	mem  registry.BlobHandler
	bad  func(h v1.Hash, b []byte) []byte // rewrites served blobs; nil: none
}

func newReg(t *testing.T) *reg {
	r := &reg{gets: map[string]int{}, mem: registry.NewInMemoryBlobHandler()}
	h := registry.New(registry.WithBlobHandler(r), registry.Logger(nullLog()))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if q.Method == http.MethodGet && strings.Contains(q.URL.Path, "/blobs/sha256:") {
			r.mu.Lock()
			r.gets[q.URL.Path[strings.LastIndex(q.URL.Path, "/")+1:]]++
			r.mu.Unlock()
		}
		h.ServeHTTP(w, q)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *reg) Get(ctx context.Context, repo string, h v1.Hash) (io.ReadCloser, error) {
	rc, err := r.mem.Get(ctx, repo, h)
	if err != nil || r.bad == nil {
		return rc, err
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(r.bad(h, b))), nil
}

func (r *reg) Stat(ctx context.Context, repo string, h v1.Hash) (int64, error) {
	return r.mem.(registry.BlobStatHandler).Stat(ctx, repo, h)
}

func (r *reg) Put(ctx context.Context, repo string, h v1.Hash, rc io.ReadCloser) error {
	return r.mem.(registry.BlobPutHandler).Put(ctx, repo, h, rc)
}

func (r *reg) remote(s *layers.Store) *Remote {
	return &Remote{Repo: strings.TrimPrefix(r.srv.URL, "http://") + "/sbx/templates", Insecure: true, Layers: s}
}

func meta() Meta {
	return Meta{TemplateID: "tpl1", BuildID: "b1-uuid", Name: "mytpl", Layers: []string{idA, idB}, Config: []byte(`{"user":"user"}`)}
}

// pushed is a registry holding meta()'s build, pushed from a fresh store.
func pushed(t *testing.T) *reg {
	t.Helper()
	r := newReg(t)
	d, err := r.remote(built(t)).Push(context.Background(), meta())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d, "sha256:") {
		t.Fatalf("digest %q", d)
	}
	return r
}

func emptyStore(t *testing.T) *layers.Store {
	return &layers.Store{Dir: filepath.Join(t.TempDir(), "layers"), Owner: "node-b"}
}

// leftovers lists .tmp- directories of s.
func leftovers(t *testing.T, s *layers.Store) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(s.Dir, ".tmp-*"))
	return m
}

func stat(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

func nullLog() *log.Logger { return log.New(io.Discard, "", 0) }
