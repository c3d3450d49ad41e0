package guard

import (
	"net"
	"net/netip"
	"time"
)

// The guard's connection steps, for the other transparent proxy of
// sandbox egress (egress/socks): one implementation of each.

// PeekName reads from c until the TLS ClientHello's SNI or the HTTP/1
// Host can be parsed, within timeout and limit bytes (the guard's
// defaults when zero), and returns the bytes read (to be replayed), the
// name, and a Reason* when there is none.
func PeekName(c net.Conn, timeout time.Duration, limit int) (peeked []byte, name, reason string) {
	g := &Guard{HandshakeTimeout: timeout, MaxPeekBytes: limit}
	return g.peekName(c)
}

// Splice copies a→b and b→a until both directions end, passing a clean
// EOF on as a half-close; a failing direction closes both connections.
func Splice(a, b net.Conn) { splice(a, b) }

// OriginalDst returns the destination a redirected connection was sent to
// before the kernel's NAT redirected it (SO_ORIGINAL_DST).
func OriginalDst(c net.Conn) (netip.AddrPort, error) { return originalDst(c) }
