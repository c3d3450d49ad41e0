package socks

import (
	"errors"
	"net"
	"net/netip"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/guard"
)

// Reasons a Tunnel refuses a connection, besides the guard.Reason* ones
// it shares with the SNI/Host guard.
const (
	ReasonNotProxied       = "sandbox has no egress proxy"
	ReasonProxyAddress     = "egress proxy address not allowed"
	ReasonProxyUnreachable = "egress proxy unreachable"
	ReasonProxyAuth        = "egress proxy authentication failed"
	ReasonProxyRefused     = "egress proxy refused the connection"
	ReasonProxyProtocol    = "egress proxy does not speak SOCKS5"
)

// admit applies pol to a connection of sandbox sb to dst and returns its
// Target (dst's address, and the name it was admitted by, if any), the
// bytes read to find a name (to be replayed), or a Reason:
//
//   - an always-blocked destination is refused, and so is one of the
//     host's own addresses, whatever its range (egress.HostAddr, as the
//     guard: a proxy on the host, or in the operator's network, would
//     connect to the host's services, which the kernel keeps from a
//     direct sandbox);
//   - a destination the IP rules allow (allowOut CIDRs, an open policy)
//     passes by address alone: the proxy is asked for the IP the rules
//     judged (a name resolved again by the proxy could land on an address
//     denyOut names);
//   - under an open policy anything else (a denyOut hit) is refused;
//   - under a domain allow-list, TCP 80/443 must state an allowed name
//     (SNI/Host) that resolved to dst for sb, exactly as the guard checks;
//     other ports pass if an allowed name resolved to dst for sb. These
//     domain-matched flows carry the name (Dial asks a public proxy for
//     it: remote DNS).
func (t *Tunnel) admit(c net.Conn, sb string, pol egress.Policy, dst netip.AddrPort) (target Target, peeked []byte, reason string) {
	ip := dst.Addr()
	target.Addr = ip
	switch {
	case egress.InAny(egress.AlwaysBlocked, ip):
		return target, nil, guard.ReasonIPBlocked
	case t.isHostAddr(ip):
		return target, nil, guard.ReasonHostAddr
	case pol.AllowsAddr(ip):
		return target, nil, ""
	case !pol.DenyAll:
		return target, nil, guard.ReasonIPDenied
	case dst.Port() == 80 || dst.Port() == 443:
		peeked, name, reason := guard.PeekName(c, t.HandshakeTimeout, 0)
		switch {
		case reason != "":
		case !pol.AllowsName(name):
			reason = guard.ReasonNameNotAllowed
		case t.Resolved == nil || !t.Resolved(sb, name, ip):
			reason = guard.ReasonNotResolved
		}
		target.Name = egress.NormName(name)
		return target, peeked, reason
	}
	if t.NameOf != nil {
		if name, ok := t.NameOf(sb, ip, pol.AllowsName); ok {
			target.Name = name
			return target, nil, ""
		}
	}
	return target, nil, guard.ReasonNotResolved
}

// isHostAddr reports whether ip is one of the host's own addresses.
func (t *Tunnel) isHostAddr(ip netip.Addr) bool {
	if t.hostAddr != nil {
		return t.hostAddr(ip)
	}
	return egress.HostAddr(ip)
}

// dialReason classifies a Dial error.
func dialReason(err error) string {
	var re *ReplyError
	switch {
	case errors.Is(err, ErrProxyAddress):
		return ReasonProxyAddress
	case errors.Is(err, ErrAuth) || errors.Is(err, ErrNoMethod):
		return ReasonProxyAuth
	case errors.As(err, &re):
		return ReasonProxyRefused
	case errors.Is(err, ErrProtocol):
		return ReasonProxyProtocol
	default:
		return ReasonProxyUnreachable
	}
}
