package oci

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// parseRef parses ref (Docker Hub short names allowed) with plain HTTP
// allowed where the Puller allows it.
func (p *Puller) parseRef(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("pull %q: not an image reference: %w", ref, err)
	}
	if p.insecure(r.Context().RegistryStr()) {
		return name.ParseReference(ref, name.Insecure)
	}
	return r, nil
}

// source is where r is fetched from: the mirror for Docker Hub images if
// one is set, else r.
func (p *Puller) source(r name.Reference) (name.Reference, error) {
	if p.Mirror == "" || r.Context().RegistryStr() != name.DefaultRegistry {
		return r, nil
	}
	sep := ":"
	if _, ok := r.(name.Digest); ok {
		sep = "@"
	}
	s := p.Mirror + "/" + r.Context().RepositoryStr() + sep + r.Identifier()
	var opts []name.Option
	if p.insecure(p.Mirror) {
		opts = append(opts, name.Insecure)
	}
	m, err := name.ParseReference(s, opts...)
	if err != nil {
		return nil, fmt.Errorf("registry mirror %q: %w", p.Mirror, err)
	}
	return m, nil
}

// insecure reports whether registry host[:port] may be spoken to over
// plain HTTP: listed in Insecure, or loopback.
func (p *Puller) insecure(registry string) bool {
	host := hostOf(registry)
	if listed(p.Insecure, registry) || host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// listed reports whether registries (each "host" or "host:port") name
// addr ("host:port" or "host"): as it is, or its host.
func listed(registries []string, addr string) bool {
	host := hostOf(addr)
	return slices.ContainsFunc(registries, func(r string) bool { return r != "" && (r == addr || r == host) })
}

// hostOf is addr without its port, if it has one.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// platform is the wanted platform (an unparsable Platform is the host's).
func (p *Puller) platform() v1.Platform {
	s := p.Platform
	if s == "" {
		s = runtime.GOOS + "/" + runtime.GOARCH
	}
	pl, err := v1.ParsePlatform(s)
	if err != nil || pl == nil {
		return v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	}
	if pl.Architecture == "arm64" && pl.Variant == "v8" {
		pl.Variant = "" // the default; indexes often leave it out
	}
	return *pl
}

// resolve fetches r's manifest (r is the source: the mirror's name for a
// mirrored image) and returns the image for the platform and
// its manifest digest.
func (p *Puller) resolve(r name.Reference, opts []remote.Option) (v1.Image, string, error) {
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return nil, "", err
	}
	img, err := p.selectImage(r, desc)
	if err != nil {
		return nil, "", err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, "", err
	}
	p.logf("resolved %s to %s", r, d)
	return img, d.String(), nil
}

// selectImage picks the platform's image from desc: from an index by its
// descriptors' platforms, a lone image by its config.
func (p *Puller) selectImage(r name.Reference, desc *remote.Descriptor) (v1.Image, error) {
	want := p.platform()
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return nil, err
		}
		return img, checkPlatform(r, img, want)
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, m := range im.Manifests {
		if m.Platform == nil || m.Platform.OS == "unknown" || !m.MediaType.IsImage() {
			continue
		}
		if m.Platform.Satisfies(want) {
			return idx.Image(m.Digest)
		}
		have = append(have, m.Platform.String())
	}
	return nil, platformErr(r, want, have)
}

// checkPlatform refuses a lone image whose config names another platform.
func checkPlatform(r name.Reference, img v1.Image, want v1.Platform) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if cf.OS == "" || cf.Architecture == "" {
		return nil
	}
	have := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	if want.Variant == "" {
		have.Variant = ""
	}
	if have.OS != want.OS || have.Architecture != want.Architecture || have.Variant != want.Variant {
		return platformErr(r, want, []string{have.String()})
	}
	return nil
}

func platformErr(r name.Reference, want v1.Platform, have []string) error {
	return fmt.Errorf("%s has no image for %s (it has: %s): %w",
		r, want.String(), strings.Join(have, ", "), ErrPlatform)
}
