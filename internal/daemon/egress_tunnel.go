package daemon

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/socks"
	"github.com/sbx-dev/sbx/internal/network"
)

// tunnelFlags are the operator's settings of egress proxies.
type tunnelFlags struct {
	port uint
	open string
}

func (t *tunnelFlags) register(fs *flag.FlagSet) {
	fs.UintVar(&t.port, "tunnel-port", 0, "host port of the egress proxy tunnel (sandboxes with network.egressProxy), bound for sandbox links only (0: a free one)")
	fs.StringVar(&t.open, "egress-proxy-open", "", "CIDRs an egressProxy address may be in although always blocked (e.g. 127.0.0.1/32 for a proxy on this host), comma separated; never the sandbox subnet. A proxy there is asked for the addresses the daemon checked, never for names (DNS rebinding)")
}

// tunnelSetup is the tunnel (served by serveTunnel), its listener and the
// dialer that reaches proxies.
type tunnelSetup struct {
	ln     net.Listener
	dialer *socks.Dialer
	t      *socks.Tunnel
}

// openTunnel binds the tunnel's port (on the wildcard address; the
// nftables input chain drops it from anything but sandbox links).
func openTunnel(f *tunnelFlags, maxConns int) (*tunnelSetup, error) {
	open, err := parsePrefixes(f.open)
	if err != nil {
		return nil, fmt.Errorf("--egress-proxy-open: %w", err)
	}
	ln, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", f.port))
	if err != nil {
		return nil, fmt.Errorf("--tunnel-port: %w", err)
	}
	d := &socks.Dialer{Ranges: egress.Ranges{Open: open}}
	return &tunnelSetup{ln: ln, dialer: d, t: &socks.Tunnel{Dial: d.Dial, MaxConnsPerSandbox: maxConns}}, nil
}

// forget closes a sandbox's tunnelled connections when its network goes.
func (t *tunnelSetup) forget(id string) { t.t.Forget(id) }

func (t *tunnelSetup) port() uint16 { return uint16(t.ln.Addr().(*net.TCPAddr).Port) }

// check is the manager's ProxyCheck: the dialer's, with the sandbox
// subnet closed to proxies whatever --egress-proxy-open says.
func (t *tunnelSetup) check(subnet netip.Prefix) func(context.Context, egress.Proxy) error {
	t.dialer.Ranges.Never = []netip.Prefix{subnet}
	return t.dialer.Check
}

// serveTunnel runs the egress proxy tunnel until ctx ends: proxied
// sandboxes' TCP is checked against their policy and dialled through
// their proxy; refusals and proxy failures are logged and audited with
// the reason (never the credentials).
func (e *egressSetup) serveTunnel(ctx context.Context, nw *network.Manager, aud auditor, log *slog.Logger) {
	t := e.tunnel.t
	t.Lookup, t.Resolved, t.NameOf, t.Log = nw.PolicyOf, e.res.Has, e.res.NameOf, log
	t.Intercept, t.Admit = e.interceptVia, e.admit
	t.Blocked = func(sb, dst, reason, detail string) {
		log.Info("egress blocked", "sandbox", sb, "dst", dst, "reason", reason, "detail", detail)
		if e.obs != nil {
			e.obs.EgressDenied(reason)
		}
		if aud != nil {
			_ = aud.Append("egress", sb, "", map[string]string{"dst": dst, "verdict": "blocked", "reason": reason, "detail": detail})
		}
	}
	log.Info("egress tunnel", "port", e.cfg.TunnelPort)
	if err := t.Serve(ctx, e.tunnel.ln); err != nil {
		log.Error("egress tunnel stopped", "err", err)
	}
}
