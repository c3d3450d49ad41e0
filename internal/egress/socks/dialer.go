package socks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
)

// DefaultDialTimeout bounds reaching a proxy and its handshake.
const DefaultDialTimeout = 10 * time.Second

// ErrProxyAddress: the proxy's host does not resolve, or only to
// addresses a proxy may not be at (Ranges).
var ErrProxyAddress = errors.New("egress proxy address not allowed")

// Dialer opens tunnelled connections through a sandbox's proxy. The zero
// value checks proxies against the default Ranges and resolves with the
// host's resolver.
type Dialer struct {
	Ranges  egress.Ranges
	Timeout time.Duration // reaching the proxy plus the handshake (DefaultDialTimeout)
	// Resolve looks a proxy host name up; net.DefaultResolver when nil.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// dial opens the TCP connection to the proxy (tests); net.Dialer when nil.
	dial func(ctx context.Context, addr string) (net.Conn, error)
}

// Check validates p's address for a create or update: its host must
// resolve (within the dial timeout), and to allowed addresses only
// (ErrProxyAddress otherwise).
func (d *Dialer) Check(ctx context.Context, p egress.Proxy) error {
	ctx, cancel := context.WithTimeout(ctx, orDefault(d.Timeout, DefaultDialTimeout))
	defer cancel()
	addrs, err := d.lookup(ctx, p.Address)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if !d.Ranges.Allowed(a.Addr()) {
			return fmt.Errorf("%w: %s resolves to %s, a private, loopback or otherwise internal address", ErrProxyAddress, p.Address, a.Addr())
		}
	}
	return nil
}

// Dial connects to t at port through p: p's host is resolved now, each
// allowed address tried in turn (the one that answers is used for the whole
// connection), then the SOCKS5 handshake asks the proxy for t's name or
// its address (Target.ask: the address unless the proxy is at a public
// one). Errors wrap
// ErrProxyAddress, a dial error, ErrProtocol, ErrNoMethod, ErrAuth or a
// *ReplyError; none holds the password.
func (d *Dialer) Dial(ctx context.Context, p egress.Proxy, t Target, port uint16) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, orDefault(d.Timeout, DefaultDialTimeout))
	defer cancel()
	c, at, err := d.reach(ctx, p)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var auth *Auth
	if p.Username != "" {
		auth = &Auth{Username: p.Username, Password: p.Password.Reveal()}
	}
	if err := Handshake(c, auth, t.ask(d.Ranges, at), port); err != nil {
		c.Close()
		return nil, err
	}
	if !stop() {
		c.Close()
		return nil, ctx.Err()
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// reach opens a TCP connection to the first allowed address of p's host
// that answers, and returns that address.
func (d *Dialer) reach(ctx context.Context, p egress.Proxy) (net.Conn, netip.Addr, error) {
	addrs, err := d.lookup(ctx, p.Address)
	if err != nil {
		return nil, netip.Addr{}, err
	}
	var errs []error
	for _, a := range addrs {
		if !d.Ranges.Allowed(a.Addr()) {
			errs = append(errs, fmt.Errorf("%w: %s", ErrProxyAddress, a.Addr()))
			continue
		}
		c, err := d.dialTCP(ctx, a.String())
		if err == nil {
			return c, a.Addr(), nil
		}
		errs = append(errs, err)
	}
	return nil, netip.Addr{}, fmt.Errorf("egress proxy %s: %w", p.Address, errors.Join(errs...))
}

// lookup resolves address ("host:port") into address-ports.
func (d *Dialer) lookup(ctx context.Context, address string) ([]netip.AddrPort, error) {
	host, ps, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrProxyAddress, address, err)
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: bad port", ErrProxyAddress, address)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = d.resolve(ctx, host); err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("%w: %s does not resolve: %v", ErrProxyAddress, host, err)
	}
	out := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		out[i] = netip.AddrPortFrom(ip.Unmap(), uint16(port))
	}
	return out, nil
}

func (d *Dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if d.Resolve != nil {
		return d.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

func (d *Dialer) dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	if d.dial != nil {
		return d.dial(ctx, addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", addr)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
