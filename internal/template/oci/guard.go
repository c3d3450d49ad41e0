package oci

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrAddressNotAllowed: the registry (or a host it redirected to) is at an
// address Puller.Guard refuses.
var ErrAddressNotAllowed = errors.New("registry address not allowed")

// dial is the transport's DialContext: with a Guard, a connection to a
// registry the operator did not name (Mirror, Insecure) may only be made to
// an address the Guard allows. The check is on the address connected to,
// after resolution (net.Dialer.Control), so a name that resolves to a
// private address, a redirect to one and a DNS answer that changes between
// a check and the connect are all refused.
func (p *Puller) dial(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	open := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if p.Guard == nil {
		return open.DialContext
	}
	guarded := *open
	guarded.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !p.Guard.Allowed(ap.Addr()) {
			return fmt.Errorf("%w: %s", ErrAddressNotAllowed, address)
		}
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p.operatorNamed(addr) {
			return open.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
}

// checkProxied applies the Guard to a request that goes through an HTTP
// proxy (the dial is then to the proxy, which resolves the registry
// itself): every address the registry's name resolves to must be allowed.
// Not pinned (the proxy resolves again), which a proxy user accepts.
func (p *Puller) checkProxied(req *http.Request, proxy func(*http.Request) (*url.URL, error)) error {
	if p.Guard == nil || proxy == nil || p.operatorNamed(req.URL.Host) {
		return nil
	}
	if u, err := proxy(req); err != nil || u == nil {
		return err
	}
	ips, err := net.DefaultResolver.LookupNetIP(req.Context(), "ip", req.URL.Hostname())
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if !p.Guard.Allowed(ip) {
			return fmt.Errorf("%w: %s is at %s", ErrAddressNotAllowed, req.URL.Hostname(), ip)
		}
	}
	return nil
}

// operatorNamed reports whether addr (host:port, or a host) is a registry
// the operator named: the Mirror or one of Insecure, with or without port.
func (p *Puller) operatorNamed(addr string) bool {
	return listed(p.Insecure, addr) || listed([]string{p.Mirror}, addr)
}
