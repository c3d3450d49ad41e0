package socks

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/guard"
)

// DefaultMaxConnsPerSandbox bounds a sandbox's open tunnelled connections
// (the kernel's per-sandbox caps do not see redirected connections).
const DefaultMaxConnsPerSandbox = 1024

// Tunnel is the transparent listener a proxied sandbox's outbound TCP is
// redirected to. For each connection: the sandbox and its policy by source
// address (Lookup), the original destination, the policy's decision (see
// admit), then a connection through the sandbox's proxy (Dial) that the
// two are spliced over. A refusal or a failing proxy resets the sandbox's
// connection (RST) and is reported to Blocked with a reason and detail.
//
// Lookup and Dial are required. Resolved nil resolves nothing (names never
// pass under a domain allow-list); NameOf nil names nothing (the proxy is
// asked for IPs); Blocked nil only logs; Log nil is slog.Default().
type Tunnel struct {
	Lookup   egress.Lookup
	Resolved func(sandbox, name string, ip netip.Addr) bool
	NameOf   func(sandbox string, ip netip.Addr, accept func(string) bool) (string, bool)
	Dial     func(ctx context.Context, p egress.Proxy, t Target, port uint16) (net.Conn, error)
	Blocked  func(sandbox, dst, reason, detail string)
	Log      *slog.Logger
	// Intercept, when set, is offered every connection admitted by the name
	// it stated (SNI/Host), with a dial that reaches that name through the
	// sandbox's proxy (network.rules: intercept.Interceptor.HandleVia);
	// false means it is tunnelled as is.
	Intercept func(ctx context.Context, c net.Conn, sb, name string, dst netip.AddrPort, peeked []byte,
		dial func(ctx context.Context, network, addr string) (net.Conn, error)) bool

	// Admit, when set, counts each connection against bounds shared with
	// other paths holding the daemon's descriptors (per team, node-wide:
	// fdlimit.Counter, the guard's own); false refuses it
	// (guard.ReasonTooMany), else release is called when it closes. nil:
	// only MaxConnsPerSandbox bounds.
	Admit func(sandbox string) (release func(), ok bool)

	HandshakeTimeout   time.Duration // SNI/Host peek (guard's default when 0)
	MaxConnsPerSandbox int           // DefaultMaxConnsPerSandbox when 0

	origDst  func(net.Conn) (netip.AddrPort, error) // guard.OriginalDst unless a test sets it
	hostAddr func(netip.Addr) bool                  // egress.HostAddr unless a test sets it

	mu    sync.Mutex                       // guards conns
	conns map[string]map[net.Conn]struct{} // sandbox id → its open connections (sandbox side)
}

// Serve accepts connections on ln until ctx ends or ln fails, each in its
// own goroutine. It closes ln, and when ctx ends every connection still
// open, and returns after all its goroutines: nil once ctx ended, the
// accept error otherwise.
func (t *Tunnel) Serve(ctx context.Context, ln net.Listener) error {
	return egress.ServeConns(ctx, ln, "egress tunnel", t.log(), t.handle)
}

// handle serves one connection; c is closed when it returns (reset when
// it was refused) or when ctx ends.
func (t *Tunnel) handle(ctx context.Context, c net.Conn) {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	sb, dst, reason, detail := t.serve(ctx, c)
	if reason == "" {
		_ = c.Close()
		return
	}
	reset(c)
	if ctx.Err() == nil {
		t.block(ctx, sb, dst.String(), reason, detail)
	}
}

// serve identifies, admits, dials and splices c; it returns a Reason (and
// a detail) when c was refused.
func (t *Tunnel) serve(ctx context.Context, c net.Conn) (sb string, dst netip.AddrPort, reason, detail string) {
	sb, pol, dst, reason := t.identify(c)
	if reason != "" {
		return sb, dst, reason, ""
	}
	release, ok := t.acquire(sb, c)
	if !ok {
		return sb, dst, guard.ReasonTooMany, ""
	}
	defer release()
	target, peeked, reason := t.admit(c, sb, pol, dst)
	if reason != "" {
		return sb, dst, reason, ""
	}
	if len(peeked) > 0 && t.Intercept != nil && t.Intercept(ctx, c, sb, target.Name, dst, peeked, t.viaProxy(sb, pol, target, dst)) {
		return sb, dst, "", ""
	}
	up, err := t.Dial(ctx, *pol.Proxy, target, dst.Port())
	if err != nil {
		return sb, dst, dialReason(err), err.Error()
	}
	defer up.Close()
	stopUp := context.AfterFunc(ctx, func() { _ = up.Close() })
	defer stopUp()
	t.log().Debug("egress tunnelled", "sandbox", sb, "dst", dst, "via", pol.Proxy.Address, "target", target)
	if _, err := up.Write(peeked); err == nil {
		guard.Splice(c, up)
	}
	return sb, dst, "", ""
}

// viaProxy is the interceptor's dial for a connection of sb admitted to
// target: through the sandbox's proxy (to the name or the checked address,
// as Dial decides), a failure reported as any other.
func (t *Tunnel) viaProxy(sb string, pol egress.Policy, target Target, dst netip.AddrPort) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		up, err := t.Dial(ctx, *pol.Proxy, target, dst.Port())
		if err != nil && ctx.Err() == nil {
			t.block(ctx, sb, dst.String(), dialReason(err), err.Error())
		}
		return up, err
	}
}

// identify finds c's sandbox, its policy and c's original destination.
func (t *Tunnel) identify(c net.Conn) (sb string, p egress.Policy, dst netip.AddrPort, reason string) {
	dst, err := t.originalDst(c)
	if err != nil {
		t.log().Warn("egress tunnel: original destination", "err", err)
		dst, _ = netip.ParseAddrPort(c.LocalAddr().String())
		reason = guard.ReasonNoOrigDst
	}
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	src, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	sb, p, ok := t.Lookup(src.Addr().Unmap())
	switch {
	case !ok:
		return "", p, dst, guard.ReasonUnknownSource
	case p.Proxy == nil && reason == "":
		reason = ReasonNotProxied
	}
	return sb, p, dst, reason
}

// reset closes c with an RST, so the sandbox's program sees "connection
// reset by peer" rather than a clean end of stream.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func (t *Tunnel) originalDst(c net.Conn) (netip.AddrPort, error) {
	if t.origDst != nil {
		return t.origDst(c)
	}
	return guard.OriginalDst(c)
}

// block reports a refused connection to Blocked and the log (debug when
// Blocked is set, which logs itself).
func (t *Tunnel) block(ctx context.Context, sb, dst, reason, detail string) {
	level := slog.LevelInfo
	if t.Blocked != nil {
		level = slog.LevelDebug
		t.Blocked(sb, dst, reason, detail)
	}
	t.log().Log(ctx, level, "egress tunnel: refused", "sandbox", sb, "dst", dst, "reason", reason, "detail", detail)
}

// acquire registers c as an open connection of sb, within
// MaxConnsPerSandbox and Admit; ok false: refused, else release must be
// called once.
func (t *Tunnel) acquire(sb string, c net.Conn) (release func(), ok bool) {
	if !t.take(sb, c) {
		return nil, false
	}
	if t.Admit == nil {
		return func() { t.release(sb, c) }, true
	}
	done, ok := t.Admit(sb)
	if !ok {
		t.release(sb, c)
		return nil, false
	}
	return func() { done(); t.release(sb, c) }, true
}

// take registers c as an open connection of sb, within MaxConnsPerSandbox.
func (t *Tunnel) take(sb string, c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conns == nil {
		t.conns = make(map[string]map[net.Conn]struct{})
	}
	limit := t.MaxConnsPerSandbox
	if limit <= 0 {
		limit = DefaultMaxConnsPerSandbox
	}
	if len(t.conns[sb]) >= limit {
		return false
	}
	if t.conns[sb] == nil {
		t.conns[sb] = make(map[net.Conn]struct{})
	}
	t.conns[sb][c] = struct{}{}
	return true
}

func (t *Tunnel) release(sb string, c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if delete(t.conns[sb], c); len(t.conns[sb]) == 0 {
		delete(t.conns, sb)
	}
}

// Forget closes every open connection of sandbox sb (call it when its
// network goes: a peer whose link vanished would otherwise hold its
// connection through the proxy until TCP gives up). Connections it
// accepts later are judged anew.
func (t *Tunnel) Forget(sb string) {
	t.mu.Lock()
	conns := t.conns[sb]
	delete(t.conns, sb)
	t.mu.Unlock()
	for c := range conns {
		_ = c.Close() // splice sees the error and closes the proxy side
	}
}

// Open returns the number of open connections of sandbox sb.
func (t *Tunnel) Open(sb string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns[sb])
}

func (t *Tunnel) log() *slog.Logger {
	if t.Log != nil {
		return t.Log
	}
	return slog.Default()
}
