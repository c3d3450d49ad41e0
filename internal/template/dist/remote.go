// Package dist moves built templates between nodes through an OCI
// registry: a ready build's layer stack is pushed as an OCI image (one
// layer per layer of the stack, the stack described in the config's labels
// and the manifest's annotations), and a node that is asked for a build
// whose layers it lacks pulls the missing ones into its layer store, each
// checked against its digests, and then serves it like a local build.
//
// Image reference of a build: <Repo>/<template id>:<build id>.
package dist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sbx-dev/sbx/internal/template/layers"
)

// Labels and annotations of a pushed template.
const (
	LabelTemplate = "dev.sbx.template.id"
	LabelBuild    = "dev.sbx.template.build"
	LabelName     = "dev.sbx.template.name"
	LabelLayers   = "dev.sbx.template.layers" // JSON list of layer ids, bottom first
	LabelConfig   = "dev.sbx.template.config" // JSON of the build's config
	AnnLayer      = "dev.sbx.layer.id"        // on each layer descriptor
)

// ErrMismatch is returned (wrapped) when the registry's image is not the
// build asked for (another stack), or content fails its digest.
var ErrMismatch = errors.New("registry content does not match the template")

// Remote is a template registry: Repo is "host[:port]/prefix" (no tag).
// Safe for concurrent use; concurrent pulls of one layer fill it once (the
// layer store's per-layer lock), a second pull finds it present.
type Remote struct {
	Repo     string
	Insecure bool // plain HTTP (tests, a registry on a trusted network)
	Layers   *layers.Store
	// MaxLayerBytes bounds one layer's uncompressed size (0: 8 GiB).
	MaxLayerBytes int64
	Transport     http.RoundTripper // nil: remote.DefaultTransport
	// Auth, if set, is the credential for every request; else Keychain
	// resolves one per registry (authn.DefaultKeychain: the docker config
	// `docker login` and `crane auth login` write, credential helpers
	// included); with neither, requests are anonymous.
	Auth     authn.Authenticator
	Keychain authn.Keychain
}

// Meta describes a build for the registry.
type Meta struct {
	TemplateID string
	BuildID    string
	Name       string   // the template's alias, informational
	Layers     []string // layer ids, bottom first
	// Digest pins the manifest a pull accepts ("" trusts the tag): the
	// digest Push returned, recorded with the build in the shared store.
	Digest string
	Config json.RawMessage // the build's config, informational
}

// Ref is the image reference of a build.
func (r *Remote) Ref(templateID, buildID string) (name.Reference, error) {
	var opts []name.Option
	if r.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.NewTag(r.Repo+"/"+templateID+":"+buildID, append(opts, name.StrictValidation)...)
	if err != nil {
		return nil, fmt.Errorf("template registry %s: %w", r.Repo, err)
	}
	return ref, nil
}

// pullRef is the reference a pull fetches: m's digest if set, else its tag.
func (r *Remote) pullRef(m Meta) (name.Reference, error) {
	tag, err := r.Ref(m.TemplateID, m.BuildID)
	if err != nil || m.Digest == "" {
		return tag, err
	}
	if _, err := v1.NewHash(m.Digest); err != nil {
		return nil, fmt.Errorf("template %s build %s: bad digest: %w", m.TemplateID, m.BuildID, err)
	}
	return tag.Context().Digest(m.Digest), nil
}

func (r *Remote) options(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx)}
	switch {
	case r.Auth != nil:
		opts = append(opts, remote.WithAuth(r.Auth))
	case r.Keychain != nil:
		opts = append(opts, remote.WithAuthFromKeychain(r.Keychain))
	default:
		opts = append(opts, remote.WithAuth(authn.Anonymous))
	}
	if r.Transport != nil {
		opts = append(opts, remote.WithTransport(r.Transport))
	}
	return opts
}

func (r *Remote) maxLayer() int64 {
	if r.MaxLayerBytes > 0 {
		return r.MaxLayerBytes
	}
	return 8 << 30
}
