package oci

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pullFixture is a loopback registry holding the test images.
type pullFixture struct {
	host             string
	base, app, arm64 v1.Image
	blobGets         atomic.Int64
}

func newPullFixture(t *testing.T) *pullFixture {
	f := &pullFixture{}
	f.host = newRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				f.blobGets.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	baseLayer := tarOf(t, dir("etc/"), file("etc/os-release", "base"))
	f.base = testImage(t, "amd64", baseLayer)
	f.app = testImage(t, "amd64", baseLayer, tarOf(t, dir("app/"), file("app/main.py", "print(1)")))
	f.arm64 = testImage(t, "arm64", tarOf(t, file("arch", "arm64")))
	push(t, f.host+"/base:v1", f.base)
	push(t, f.host+"/app:v1", f.app)
	push(t, f.host+"/lone-arm:v1", f.arm64)
	pushIndex(t, f.host+"/multi:v1", testIndex(t, map[string]v1.Image{"amd64": f.app, "arm64": f.arm64}))
	pushIndex(t, f.host+"/arm-only:v1", testIndex(t, map[string]v1.Image{"arm64": f.arm64}))
	return f
}

func digestOf(t *testing.T, img v1.Image) string {
	d, err := img.Digest()
	must(t, err)
	return d.String()
}

// TestPull: references by tag and digest, platform selection, and the
// errors of a missing image and a missing platform.
func TestPull(t *testing.T) {
	needRoot(t)
	f := newPullFixture(t)
	appDigest := digestOf(t, f.app)
	cases := []struct {
		name, ref string
		want      error
		digest    string
		files     []string
	}{
		{"tag", f.host + "/app:v1", nil, appDigest, []string{"etc/os-release", "app/main.py"}},
		{"digest", f.host + "/app@" + appDigest, nil, appDigest, []string{"app/main.py"}},
		{"index picks amd64", f.host + "/multi:v1", nil, appDigest, []string{"app/main.py"}},
		{"arm64-only index", f.host + "/arm-only:v1", ErrPlatform, "", nil},
		{"arm64 lone image", f.host + "/lone-arm:v1", ErrPlatform, "", nil},
		{"unknown tag", f.host + "/app:nope", ErrNotFound, "", nil},
		{"unknown repository", f.host + "/nope:v1", ErrNotFound, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := newStore(t)
			p := &Puller{Platform: "linux/amd64"}
			img, err := p.Pull(context.Background(), c.ref, nil, store)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Fatalf("Pull = %v, want %v", err, c.want)
				}
				return
			}
			must(t, err)
			if img.Digest != c.digest || img.Config.WorkingDir != "/app" || img.Config.User != "1000:1000" ||
				!slices.Equal(img.Config.Cmd, []string{"-c", "true"}) || !slices.Contains(img.Config.Env, "ARCH=amd64") {
				t.Fatalf("image = %+v", img)
			}
			for _, name := range c.files {
				if !inLayers(store.Dir, img.Layers, name) {
					t.Errorf("%s in no layer", name)
				}
			}
		})
	}
}

// TestPullPlatformMessage: ErrPlatform lists what the image has.
func TestPullPlatformMessage(t *testing.T) {
	f := newPullFixture(t)
	_, err := (&Puller{Platform: "linux/riscv64"}).Pull(context.Background(), f.host+"/multi:v1", nil, newStore(t))
	if !errors.Is(err, ErrPlatform) || !strings.Contains(err.Error(), "linux/amd64") || !strings.Contains(err.Error(), "linux/arm64") {
		t.Fatalf("Pull = %v", err)
	}
}

func inLayers(dir string, keys []string, name string) bool {
	for _, k := range keys {
		if _, err := os.Lstat(filepath.Join(dir, k, name)); err == nil {
			return true
		}
	}
	return false
}

// TestPullCachedAndShared: a second pull fills nothing and fetches no layer
// blob; an image sharing a base layer fills only its own layer.
func TestPullCachedAndShared(t *testing.T) {
	needRoot(t)
	f := newPullFixture(t)
	store := newStore(t)
	var log bytes.Buffer
	p := &Puller{Log: &log, Platform: "linux/amd64"}
	ctx := context.Background()
	base, err := p.Pull(ctx, f.host+"/base:v1", nil, store)
	must(t, err)
	if store.total() != 1 {
		t.Fatalf("fills after base = %d, want 1", store.total())
	}
	app, err := p.Pull(ctx, f.host+"/app:v1", nil, store)
	must(t, err)
	if store.total() != 2 || app.Layers[0] != base.Layers[0] {
		t.Fatalf("fills after app = %d (want 2), layers %v / %v", store.total(), base.Layers, app.Layers)
	}
	gets := f.blobGets.Load()
	again, err := p.Pull(ctx, f.host+"/app:v1", nil, store)
	must(t, err)
	if store.total() != 2 || !slices.Equal(again.Layers, app.Layers) {
		t.Fatalf("re-pull filled again: %d", store.total())
	}
	if n := f.blobGets.Load() - gets; n > 1 { // the config blob only
		t.Fatalf("re-pull fetched %d blobs, want only the config", n)
	}
	if !strings.Contains(log.String(), "cached sha256:") || !strings.Contains(log.String(), "pulling sha256:") {
		t.Fatalf("log = %q", log.String())
	}
}

// TestPullAuth: a registry asking for basic auth refuses anonymous and
// wrong credentials with ErrAuth and serves the right ones.
func TestPullAuth(t *testing.T) {
	needRoot(t)
	host := newRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "secret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	push(t, host+"/private:v1", testImage(t, "amd64", tarOf(t, file("x", "y"))),
		remote.WithAuth(&authn.Basic{Username: "user", Password: "secret"}))
	for _, c := range []struct {
		name string
		auth *Auth
		want error
	}{
		{"anonymous", nil, ErrAuth},
		{"wrong password", &Auth{Username: "user", Password: "wrong"}, ErrAuth},
		{"right", &Auth{Username: "user", Password: "secret"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := (&Puller{Platform: "linux/amd64"}).Pull(context.Background(), host+"/private:v1", c.auth, newStore(t))
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Pull = %v, want %v", err, c.want)
			}
		})
	}
}

// TestPullStalls: a registry that stops sending a layer, or never answers
// it, fails the pull with ErrUnreachable in a few stall timeouts, and the
// store keeps nothing of the layer.
func TestPullStalls(t *testing.T) {
	needRoot(t)
	layer := tarOf(t, file("big", strings.Repeat("z", 1<<20)))
	img := testImage(t, "amd64", layer)
	ls, err := img.Layers()
	must(t, err)
	ld, err := ls[0].Digest()
	must(t, err)
	for _, headers := range []bool{true, false} {
		t.Run(map[bool]string{true: "mid-body", false: "before headers"}[headers], func(t *testing.T) {
			host := newRegistry(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ld.String()) && r.Header.Get("X-Push") == "" {
						hang(w, r, headers)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
			push(t, host+"/slow:v1", img)
			store := newStore(t)
			start := time.Now()
			stall := 300 * time.Millisecond
			_, err := (&Puller{StallTimeout: stall, Platform: "linux/amd64"}).Pull(context.Background(), host+"/slow:v1", nil, store)
			if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "--registry-mirror") {
				t.Fatalf("Pull = %v, want ErrUnreachable with a hint", err)
			}
			if d := time.Since(start); d > 8*stall+time.Second {
				t.Fatalf("stalled pull took %v", d)
			}
			if got := names(t, store.Dir); len(got) != 0 {
				t.Fatalf("store holds %v after a failed pull", got)
			}
		})
	}
}

// hang answers a blob with a few bytes then nothing (or nothing at all)
// until the client goes away.
func hang(w http.ResponseWriter, r *http.Request, headers bool) {
	if headers {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte{0x1f, 0x8b})
		w.(http.Flusher).Flush()
	}
	select {
	case <-r.Context().Done():
	case <-time.After(30 * time.Second):
	}
}

// TestPullUnreachable: a registry nobody listens on is ErrUnreachable.
func TestPullUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	l.Close()
	_, err = (&Puller{StallTimeout: time.Second}).Pull(context.Background(), addr+"/x:v1", nil, newStore(t))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Pull = %v, want ErrUnreachable naming %s", err, addr)
	}
}

// TestPullMirror: a Docker Hub short name is fetched from the mirror.
func TestPullMirror(t *testing.T) {
	needRoot(t)
	f := newPullFixture(t)
	push(t, f.host+"/library/python:3.12", f.app)
	p := &Puller{Mirror: f.host, Platform: "linux/amd64"}
	img, err := p.Pull(context.Background(), "python:3.12", nil, newStore(t))
	must(t, err)
	if img.Ref != "index.docker.io/library/python:3.12" || img.Digest != digestOf(t, f.app) {
		t.Fatalf("image = %+v", img)
	}
}

// TestPullTooLarge: a layer above MaxLayerBytes is ErrTooLarge.
func TestPullTooLarge(t *testing.T) {
	needRoot(t)
	f := newPullFixture(t)
	store := newStore(t)
	_, err := (&Puller{MaxLayerBytes: 1024, Platform: "linux/amd64"}).Pull(context.Background(), f.host+"/app:v1", nil, store)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Pull = %v, want ErrTooLarge", err)
	}
	if got := names(t, store.Dir); len(got) != 0 {
		t.Fatalf("store holds %v", got)
	}
}

// TestInsecure: listed registries and loopback speak plain HTTP.
func TestInsecure(t *testing.T) {
	p := &Puller{Insecure: []string{"reg.lan:5000", "other.lan"}}
	for reg, want := range map[string]bool{
		"reg.lan:5000": true, "reg.lan": false, "other.lan:443": true, "localhost:5000": true,
		"127.0.0.2:80": true, "[::1]:5000": true, "ghcr.io": false, "index.docker.io": false,
	} {
		if got := p.insecure(reg); got != want {
			t.Errorf("insecure(%s) = %v, want %v", reg, got, want)
		}
	}
	r, err := p.parseRef("reg.lan:5000/a:b")
	must(t, err)
	if s := r.Context().Registry.Scheme(); s != "http" {
		t.Fatalf("scheme = %s", s)
	}
}

// TestPullHidesResolver: a name that does not resolve fails naming the
// image and the registry, never the daemon's resolver address.
func TestPullHidesResolver(t *testing.T) {
	ref, err := name.ParseReference("no-such-registry.example/x:v1")
	must(t, err)
	dns := &net.DNSError{Name: "no-such-registry.example", Server: "10.255.255.53:53", Err: "no such host", IsNotFound: true}
	in := &url.Error{Op: "Get", URL: "https://no-such-registry.example/v2/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: dns}}
	got := (&Puller{}).classify(context.Background(), ref, in).Error()
	if strings.Contains(got, "10.255.255.53") || !strings.Contains(got, "no-such-registry.example") || !strings.Contains(got, "no such host") {
		t.Fatalf("reason %q: want the registry and the failure, not the resolver", got)
	}
}
