package oci

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sbx-dev/sbx/internal/egress"
)

// LayerStore holds unpacked layers by key. Ensure returns the directory of
// key, calling fill(tmpDir) to create it first if it is missing (fill
// writes the layer's tree into tmpDir; the store renames it into place
// atomically; on fill error nothing remains).
type LayerStore interface {
	Ensure(ctx context.Context, key string, fill func(dir string) error) (path string, err error)
}

// Auth is a registry's basic credentials (a token goes in Password).
type Auth struct{ Username, Password string }

// Puller pulls images into a LayerStore. The zero value pulls over HTTPS
// (plain HTTP for loopback registries) for the host's platform. A Puller
// may be used by several goroutines once set up.
type Puller struct {
	Insecure      []string      // registries ("host" or "host:port") reachable over plain HTTP; loopback always is
	Mirror        string        // optional registry mirror host[:port] used for Docker Hub (index.docker.io) images
	Platform      string        // "os/arch[/variant]"; "" is runtime.GOOS/runtime.GOARCH
	MaxLayerBytes int64         // bound on one layer's uncompressed size (0: 8 GiB); exceeding is ErrTooLarge
	MaxImageBytes int64         // bound on the whole image (0: 32 GiB), see Pull
	StallTimeout  time.Duration // a registry that sends nothing for this long fails the pull (0: 60s); total bounded by ctx
	Log           io.Writer     // human progress lines, may be nil
	// Guard, when set, bounds where the pull may connect (see dial): a
	// tenant's build must not make the daemon reach the host's or the
	// network's private services. nil: anywhere (the operator's builds).
	Guard *egress.Ranges
}

// Image is a pulled image.
type Image struct {
	Ref    string   // normalized reference as given (before any mirror)
	Digest string   // digest "sha256:…" of the platform's image manifest
	Layers []string // LayerStore keys, bottom layer first
	Config Config
}

// Config is the part of an image's configuration a sandbox runs with.
type Config struct {
	Env        []string // "K=V"
	WorkingDir string
	User       string
	Entrypoint []string
	Cmd        []string
}

const (
	defaultMaxLayer = 8 << 30
	defaultMaxImage = 32 << 30
	defaultStall    = 60 * time.Second
)

func (p *Puller) stall() time.Duration { return orDefault(p.StallTimeout, defaultStall) }
func (p *Puller) maxLayer() int64      { return orDefault(p.MaxLayerBytes, defaultMaxLayer) }
func (p *Puller) maxImage() int64      { return orDefault(p.MaxImageBytes, defaultMaxImage) }
func orDefault[T int64 | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// Pull resolves ref (tag or digest; Docker Hub short names like
// "python:3.12" work), selects Platform from an index, and makes every
// layer present in store under the key = the layer's DiffID hex without
// "sha256:" (so layers shared between images are stored once and a re-pull
// of a cached layer downloads nothing). Each layer's content is checked
// against its DiffID. MaxImageBytes bounds the layers' compressed sizes
// from the manifest and the uncompressed bytes of the layers this call
// unpacks. auth nil is anonymous.
func (p *Puller) Pull(ctx context.Context, ref string, auth *Auth, store LayerStore) (*Image, error) {
	r, err := p.parseRef(ref)
	if err != nil {
		return nil, err
	}
	p.logf("resolving %s", r)
	tr := p.transport()
	defer tr.closeIdle()
	src, err := p.source(r)
	if err != nil {
		return nil, err
	}
	img, digest, err := p.resolve(src, p.remoteOptions(ctx, auth, tr))
	if err != nil {
		return nil, p.classify(ctx, src, err)
	}
	out, err := p.pullImage(ctx, img, store)
	if err != nil {
		return nil, p.classify(ctx, src, err)
	}
	out.Ref, out.Digest = r.Name(), digest
	return out, nil
}

// pullImage reads img's config and makes its layers present in store.
func (p *Puller) pullImage(ctx context.Context, img v1.Image, store LayerStore) (*Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read image config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("read manifest layers: %w", err)
	}
	keys, err := p.pullLayers(ctx, layers, store)
	if err != nil {
		return nil, err
	}
	c := cf.Config
	return &Image{Layers: keys, Config: Config{
		Env: c.Env, WorkingDir: c.WorkingDir, User: c.User, Entrypoint: c.Entrypoint, Cmd: c.Cmd,
	}}, nil
}

// remoteOptions are the go-containerregistry options of one pull.
func (p *Puller) remoteOptions(ctx context.Context, auth *Auth, tr *stallTransport) []remote.Option {
	a := authn.Anonymous
	if auth != nil && (auth.Username != "" || auth.Password != "") {
		a = authn.FromConfig(authn.AuthConfig{Username: auth.Username, Password: auth.Password})
	}
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuth(a),
		remote.WithTransport(tr),
		remote.WithPlatform(p.platform()),
		// one retry, soon: a stalled registry should fail in about two
		// stall timeouts, not in ggcr's default three tries with backoff.
		remote.WithRetryBackoff(remote.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 2}),
	}
}

func (p *Puller) logf(format string, args ...any) {
	if p.Log != nil {
		fmt.Fprintf(p.Log, format+"\n", args...)
	}
}
