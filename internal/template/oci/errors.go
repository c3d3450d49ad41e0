// Package oci pulls OCI and Docker images from registries and unpacks their
// layers into directories in overlayfs format, one directory per layer.
//
// Pull resolves a reference, selects the platform's manifest and makes every
// layer present in a LayerStore under its DiffID, so layers shared between
// images are fetched and stored once. Unpack writes one layer's tar stream
// into a directory; every entry is resolved inside that directory with
// openat2(2), whatever names, symlinks and hardlinks the layer holds.
package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Sentinel errors; every error returned by this package that belongs to one
// of these categories wraps it (test with errors.Is).
var (
	// ErrNotFound: the registry has no such repository, tag or digest.
	ErrNotFound = errors.New("image not found")
	// ErrAuth: the registry refused access (401/403, bad credentials).
	ErrAuth = errors.New("registry refused access")
	// ErrPlatform: the image has no manifest for the requested platform.
	ErrPlatform = errors.New("image not available for the platform")
	// ErrUnsafeLayer: a layer tried to write outside its directory, linked
	// to something outside it or missing, or does not match its digest.
	ErrUnsafeLayer = errors.New("unsafe layer")
	// ErrTooLarge: a layer or the image exceeds its size bound.
	ErrTooLarge = errors.New("image too large")
	// ErrUnreachable: the registry could not be reached, timed out or
	// stopped sending.
	ErrUnreachable = errors.New("registry unreachable")
)

// errStalled is returned by a response body that received nothing for the
// stall timeout; classify turns it into ErrUnreachable.
var errStalled = errors.New("registry stopped sending")

const hint = "if the registry is slow or blocked use --registry-mirror; if it speaks plain HTTP use --insecure-registry"

// classify wraps err from pulling r into one of the sentinel categories
// with a message naming the image and the registry.
func (p *Puller) classify(ctx context.Context, r name.Reference, err error) error {
	reg := r.Context().RegistryStr()
	hideResolver(err)
	var terr *transport.Error
	switch {
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrUnsafeLayer),
		errors.Is(err, ErrPlatform), errors.Is(err, ErrNotFound),
		errors.Is(err, ErrAuth), errors.Is(err, ErrUnreachable):
		return fmt.Errorf("pull %s: %w", r, err)
	case errors.Is(err, ErrAddressNotAllowed):
		return fmt.Errorf("pull %s: %w; a team's builds may not pull from private, loopback or link-local addresses (the operator's may; sbx serve --registry-open opens ranges to all teams)", r, err)
	case errors.Is(err, errStalled):
		return fmt.Errorf("pull %s: registry %s sent nothing for %s (%w); %s: %w",
			r, reg, p.stall(), err, hint, ErrUnreachable)
	case ctx.Err() != nil:
		return fmt.Errorf("pull %s: %w", r, ctx.Err())
	case errors.As(err, &terr):
		return classifyStatus(r, terr)
	case isNetwork(err):
		return fmt.Errorf("pull %s: cannot reach registry %s: %w; %s: %w", r, reg, err, hint, ErrUnreachable)
	}
	return fmt.Errorf("pull %s: %w", r, err)
}

// hideResolver drops the resolver's address from a DNS failure in err
// ("lookup x on 10.0.0.53:53: no such host"): the reason reaches the team
// that asked for the pull, and the daemon's upstream is the host's.
func hideResolver(err error) {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		dns.Server = ""
	}
}

// classifyStatus maps a registry's HTTP error answer.
func classifyStatus(r name.Reference, terr *transport.Error) error {
	reg := r.Context().RegistryStr()
	switch terr.StatusCode {
	case 401, 403:
		return fmt.Errorf("pull %s: registry %s refused access (%d); check the credentials (a private or missing repository answers the same way): %w",
			r, reg, terr.StatusCode, ErrAuth)
	case 404:
		return fmt.Errorf("pull %s: registry %s has no such repository, tag or digest: %w", r, reg, ErrNotFound)
	}
	for _, d := range terr.Errors {
		switch d.Code {
		case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
			return fmt.Errorf("pull %s: registry %s: %s: %w", r, reg, d.Message, ErrNotFound)
		case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
			return fmt.Errorf("pull %s: registry %s refused access: %s: %w", r, reg, d.Message, ErrAuth)
		}
	}
	return fmt.Errorf("pull %s: registry %s: %w", r, reg, terr)
}

// isNetwork reports whether err is a transport failure: dial, TLS, timeout,
// reset or a connection cut in the middle of a body.
func isNetwork(err error) bool {
	var nerr net.Error
	var uerr *url.Error
	return errors.As(err, &nerr) || errors.As(err, &uerr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED)
}
