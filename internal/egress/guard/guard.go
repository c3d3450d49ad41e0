package guard

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Guard defaults (see the Guard fields).
const (
	DefaultHandshakeTimeout   = 10 * time.Second
	DefaultMaxPeekBytes       = 16 << 10
	DefaultMaxConnsPerSandbox = 256
)

// Guard is the SNI/Host check of domain egress rules: a transparent TCP
// proxy the kernel redirects a sandbox's outbound TCP 80/443 to. For each
// connection it finds the sandbox by source address (Lookup) and the
// original destination (SO_ORIGINAL_DST), then:
//
//   - an always-blocked destination (egress.AlwaysBlocked, Never) is refused, and
//     so is one of the host's own addresses (egress.HostAddr: the guard
//     dials from the host, where it would reach the host's services);
//   - a destination the policy's IP rules allow (egress.Policy.AllowsAddr: an
//     allowOut IP/CIDR, or an open policy) is forwarded as is;
//   - under an open policy, anything else (a denyOut hit) is refused;
//   - otherwise (a deny-all or domain allow-list policy) it reads the TLS
//     ClientHello's SNI or the HTTP/1 Host, bounded in bytes and time, and
//     forwards only if egress.Policy.AllowsName(name) and Resolved(sandbox, name,
//     ip): the DNS filter gave this sandbox that address for that name.
//
// So a spoofed name (curl --resolve, /etc/hosts), IP literals, a missing
// SNI or non-TLS junk all fail. Forwarding replays the peeked bytes, then
// copies both ways with half-close. Nothing is decrypted: what the client
// says inside TLS (or in a later HTTP request on the same connection) is
// not seen; the address check bounds that to servers the allowed name
// resolves to.
//
// Lookup is required. Resolved nil resolves nothing (fail closed); Blocked
// nil only logs; Dial nil dials directly; Log nil is slog.Default(). The
// limits default to the constants above when zero.
type Guard struct {
	Lookup   egress.Lookup
	Resolved func(sandbox, name string, ip netip.Addr) bool
	Blocked  func(sandbox, dst, reason string)
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	Log      *slog.Logger
	// Intercept, when set, is offered every admitted connection whose name
	// was read (SNI or Host): it serves c itself and returns true (header
	// rules, package egress/intercept), or returns false without reading
	// and the connection is forwarded as usual.
	Intercept func(ctx context.Context, c net.Conn, sb, name string, dst netip.AddrPort, peeked []byte) bool
	// Never are destinations refused like always-blocked ones whatever
	// their range: the sandbox subnet (other sandboxes), which an operator
	// may have put outside egress.AlwaysBlocked.
	Never []netip.Prefix

	// Admit, when set, counts each connection against bounds shared with
	// other paths holding the daemon's descriptors (per team, node-wide:
	// fdlimit.Counter); false refuses it (ReasonTooMany), else release is
	// called when it closes. nil: only MaxConnsPerSandbox bounds.
	Admit func(sandbox string) (release func(), ok bool)

	HandshakeTimeout   time.Duration // from accept until the name is read
	MaxPeekBytes       int           // bytes read while looking for the name
	MaxConnsPerSandbox int           // open connections per sandbox, peeking included

	// origDst finds a connection's original destination; originalDst
	// (conntrack) unless a test injects one.
	origDst func(net.Conn) (netip.AddrPort, error)
	// hostAddr tells the host's own addresses; egress.HostAddr unless a
	// test injects one.
	hostAddr func(netip.Addr) bool

	mu    sync.Mutex     // guards conns
	conns map[string]int // sandbox id → open connections
}

// Serve accepts connections on ln until ctx ends or ln fails, handling each
// in its own goroutine. It closes ln, and when ctx ends every connection
// still open, and returns only after all its goroutines have: nil after
// ctx ended, the accept error otherwise.
func (g *Guard) Serve(ctx context.Context, ln net.Listener) error {
	return egress.ServeConns(ctx, ln, "egress guard", g.log(), g.handle)
}

// acquire counts a connection of sandbox against MaxConnsPerSandbox and
// Admit; ok false: refused, else release must be called once.
func (g *Guard) acquire(sandbox string) (release func(), ok bool) {
	if !g.take(sandbox) {
		return nil, false
	}
	if g.Admit == nil {
		return func() { g.give(sandbox) }, true
	}
	done, ok := g.Admit(sandbox)
	if !ok {
		g.give(sandbox)
		return nil, false
	}
	return func() { done(); g.give(sandbox) }, true
}

// take counts a connection of sandbox against MaxConnsPerSandbox.
func (g *Guard) take(sandbox string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conns == nil {
		g.conns = make(map[string]int)
	}
	if g.conns[sandbox] >= orDefaultInt(g.MaxConnsPerSandbox, DefaultMaxConnsPerSandbox) {
		return false
	}
	g.conns[sandbox]++
	return true
}

func (g *Guard) give(sandbox string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conns[sandbox]--; g.conns[sandbox] <= 0 {
		delete(g.conns, sandbox)
	}
}

func (g *Guard) log() *slog.Logger {
	if g.Log != nil {
		return g.Log
	}
	return slog.Default()
}

func orDefaultInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
