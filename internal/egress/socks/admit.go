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

// admit applies pol to a connection of sandbox sb to dst and returns the
// host the proxy is asked for (a name for the proxy to resolve, or the
// IP), the bytes read to find a name (to be replayed), or a Reason:
//
//   - an always-blocked destination is refused;
//   - a destination the IP rules allow (allowOut CIDRs, an open policy)
//     passes, and the proxy is asked for the IP: the address the rules
//     judged (a name resolved again by the proxy could land on an address
//     denyOut names);
//   - under an open policy anything else (a denyOut hit) is refused;
//   - under a domain allow-list, TCP 80/443 must state an allowed name
//     (SNI/Host) that resolved to dst for sb, exactly as the guard checks;
//     other ports pass if an allowed name resolved to dst for sb. These
//     domain-matched flows ask the proxy for the name (remote DNS).
func (t *Tunnel) admit(c net.Conn, sb string, pol egress.Policy, dst netip.AddrPort) (host string, peeked []byte, reason string) {
	ip := dst.Addr()
	switch {
	case egress.InAny(egress.AlwaysBlocked, ip):
		return "", nil, guard.ReasonIPBlocked
	case pol.AllowsAddr(ip):
		return ip.String(), nil, ""
	case !pol.DenyAll:
		return "", nil, guard.ReasonIPDenied
	case dst.Port() == 80 || dst.Port() == 443:
		peeked, name, reason := guard.PeekName(c, t.HandshakeTimeout, 0)
		switch {
		case reason != "":
		case !pol.AllowsName(name):
			reason = guard.ReasonNameNotAllowed
		case t.Resolved == nil || !t.Resolved(sb, name, ip):
			reason = guard.ReasonNotResolved
		}
		return egress.NormName(name), peeked, reason
	}
	if t.NameOf != nil {
		if name, ok := t.NameOf(sb, ip, pol.AllowsName); ok {
			return name, nil, ""
		}
	}
	return "", nil, guard.ReasonNotResolved
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
