package guard

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Reasons a Guard refuses a connection, as passed to Guard.Blocked.
const (
	ReasonUnknownSource  = "unknown source"
	ReasonNoOrigDst      = "no original destination"
	ReasonTooMany        = "too many connections"
	ReasonIPBlocked      = "ip always blocked"
	ReasonHostAddr       = "host address"
	ReasonIPDenied       = "ip denied"
	ReasonTimeout        = "handshake timeout"
	ReasonClosed         = "closed before handshake"
	ReasonTooLarge       = "handshake too large"
	ReasonNoSNI          = "no sni"
	ReasonNoHost         = "no host"
	ReasonBadHello       = "malformed client hello"
	ReasonBadRequest     = "malformed http request"
	ReasonNameNotAllowed = "name not allowed"
	ReasonNotResolved    = "ip not resolved for name"
)

// handle serves one accepted connection; it closes c when done or when ctx
// ends.
func (g *Guard) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	sb, pol, dst, reason := g.identify(c)
	if reason == "" {
		reason = g.serveConn(ctx, c, sb, pol, dst)
	}
	if reason != "" {
		g.block(ctx, sb, dst.String(), reason)
	}
}

// serveConn counts the connection against its bounds (acquire), decides on it
// and forwards it; it returns a Reason if it was refused.
func (g *Guard) serveConn(ctx context.Context, c net.Conn, sb string, pol egress.Policy, dst netip.AddrPort) string {
	release, ok := g.acquire(sb)
	if !ok {
		return ReasonTooMany
	}
	defer release()
	peeked, name, reason := g.admit(c, sb, pol, dst.Addr())
	switch {
	case reason != "":
	case name != "" && g.Intercept != nil && g.Intercept(ctx, c, sb, name, dst, peeked):
	default:
		g.forward(ctx, c, sb, name, dst, peeked)
	}
	return reason
}

// identify finds c's sandbox, its policy and c's original destination
// (unmapped; c's local address when it cannot be found, with a Reason).
func (g *Guard) identify(c net.Conn) (sb string, p egress.Policy, dst netip.AddrPort, reason string) {
	dst, err := g.originalDst(c)
	if err != nil {
		g.log().Warn("egress guard: original destination", "err", err)
		dst, _ = netip.ParseAddrPort(c.LocalAddr().String())
		reason = ReasonNoOrigDst
	}
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	src, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	sb, p, ok := g.Lookup(src.Addr().Unmap())
	if !ok {
		return "", p, dst, ReasonUnknownSource
	}
	return sb, p, dst, reason
}

// admit decides on a connection of sandbox sb to ip (see Guard) and returns
// the bytes it had to read, the name it read, and a Reason when refused.
func (g *Guard) admit(c net.Conn, sb string, p egress.Policy, ip netip.Addr) (peeked []byte, name, reason string) {
	switch {
	case egress.InAny(egress.AlwaysBlocked, ip) || egress.InAny(g.Never, ip):
		return nil, "", ReasonIPBlocked
	case g.isHostAddr(ip):
		return nil, "", ReasonHostAddr
	case p.AllowsAddr(ip):
		return nil, "", ""
	case !p.DenyAll:
		return nil, "", ReasonIPDenied
	}
	peeked, name, reason = g.peekName(c)
	switch {
	case reason != "":
	case !p.AllowsName(name):
		reason = ReasonNameNotAllowed
	case g.Resolved == nil || !g.Resolved(sb, name, ip):
		reason = ReasonNotResolved
	}
	return peeked, name, reason
}

// peekName reads from c until the TLS SNI or HTTP Host can be parsed,
// within HandshakeTimeout and MaxPeekBytes.
func (g *Guard) peekName(c net.Conn) (buf []byte, name, reason string) {
	_ = c.SetReadDeadline(time.Now().Add(orDefault(g.HandshakeTimeout, DefaultHandshakeTimeout)))
	defer c.SetReadDeadline(time.Time{})
	limit := orDefaultInt(g.MaxPeekBytes, DefaultMaxPeekBytes)
	buf = make([]byte, 0, min(limit, 4096))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, min(cap(buf), limit-len(buf)))...)[:len(buf)]
		}
		n, rerr := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		name, perr := parseName(buf)
		switch {
		case perr == nil:
			return buf, name, ""
		case !errors.Is(perr, ErrNeedMore):
			return buf, "", parseReason(buf, perr)
		case len(buf) >= limit:
			return buf, "", ReasonTooLarge
		case rerr != nil:
			return buf, "", readReason(rerr)
		}
	}
}

// parseName parses the ClientHello or HTTP request at the start of buf,
// told apart by the first byte (a TLS handshake record is 0x16).
func parseName(buf []byte) (string, error) {
	switch {
	case len(buf) == 0:
		return "", ErrNeedMore
	case buf[0] == typeHandshake:
		return ParseClientHello(buf)
	default:
		return ParseHTTPHost(buf)
	}
}

func parseReason(buf []byte, err error) string {
	tls := buf[0] == typeHandshake
	switch {
	case errors.Is(err, ErrNoName) && tls:
		return ReasonNoSNI
	case errors.Is(err, ErrNoName):
		return ReasonNoHost
	case tls:
		return ReasonBadHello
	default:
		return ReasonBadRequest
	}
}

func readReason(err error) string {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return ReasonTimeout
	}
	return ReasonClosed // EOF, reset, or closed because Serve stops
}

func (g *Guard) isHostAddr(ip netip.Addr) bool {
	if g.hostAddr != nil {
		return g.hostAddr(ip)
	}
	return egress.HostAddr(ip)
}

func (g *Guard) originalDst(c net.Conn) (netip.AddrPort, error) {
	if g.origDst != nil {
		return g.origDst(c)
	}
	return originalDst(c)
}

// block reports a refused connection: to Blocked, and to the log (at debug
// level when Blocked is set). Connections cut because Serve is stopping are
// not reported.
func (g *Guard) block(ctx context.Context, sb, dst, reason string) {
	if ctx.Err() != nil {
		return
	}
	level := slog.LevelInfo
	if g.Blocked != nil {
		level = slog.LevelDebug
		g.Blocked(sb, dst, reason)
	}
	g.log().Log(ctx, level, "egress guard: blocked", "sandbox", sb, "dst", dst, "reason", reason)
}
