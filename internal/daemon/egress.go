package daemon

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/dnsfilter"
	"github.com/sbx-dev/sbx/internal/egress/guard"
	"github.com/sbx-dev/sbx/internal/network"
)

// egressFlags are the operator's settings of the path out of sandboxes.
type egressFlags struct {
	dnsUpstream, open, uplinks string
	dnsPort, guardPort         uint
	connRate, maxConns         uint
	tunnel                     tunnelFlags // egress proxies (egress_tunnel.go)
}

func (e *egressFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&e.dnsUpstream, "dns-upstream", "", "host:port of the resolver the sandboxes' DNS filter asks (default: first nameserver of /etc/resolv.conf)")
	fs.UintVar(&e.dnsPort, "dns-port", 0, "host port of the sandboxes' DNS filter, bound for sandbox links only (0: a free one)")
	fs.UintVar(&e.guardPort, "guard-port", 0, "host port of the SNI/Host guard for domain allow-lists, bound for sandbox links only (0: a free one)")
	fs.StringVar(&e.open, "egress-open", "", "CIDRs to open although always blocked (private, link-local, ...), comma separated; never the sandbox subnet")
	fs.StringVar(&e.uplinks, "uplink", "auto", "links sandbox traffic is masqueraded out of, where IPv4 forwarding is turned on: comma list, \"auto\" (default-route links) or \"none\"")
	fs.UintVar(&e.connRate, "egress-conn-rate", 100, "new outbound connections per second per sandbox")
	fs.UintVar(&e.maxConns, "egress-max-conns", 1024, "concurrent outbound connections per sandbox")
	e.tunnel.register(fs)
}

// egressSetup is what serve needs of the egress path before and after the
// network manager exists.
type egressSetup struct {
	cfg      network.Egress
	pc       net.PacketConn
	ln       net.Listener // DNS over TCP
	guardLn  net.Listener
	tunnel   *tunnelSetup // egress proxies
	upstream string
	res      *egress.Resolutions // what the DNS filter answered, for the guard
	obs      egressObserver      // metrics; nil: none
	// admit is the guard's and tunnel's shared bound by team and node
	// (egressAdmit); nil: per sandbox only
	admit func(sb string) (release func(), ok bool)
	// intercept serves connections to names with network.rules (guard.Guard.Intercept); nil: none
	intercept func(ctx context.Context, c net.Conn, sb, name string, dst netip.AddrPort, peeked []byte) bool
	// interceptVia is intercept for the egress proxy tunnel (upstream through the proxy); nil: none
	interceptVia func(ctx context.Context, c net.Conn, sb, name string, dst netip.AddrPort, peeked []byte,
		dial func(ctx context.Context, network, addr string) (net.Conn, error)) bool
}

// egressObserver counts DNS verdicts and guard refusals (metrics).
type egressObserver interface {
	DNSQuery(verdict string)
	EgressDenied(reason string)
}

// openEgress opens the DNS filter's sockets (their port goes into the
// nftables redirect), parses the open ranges and turns forwarding on for
// the uplinks. Close pc/ln on a later error (serve does, via close).
func openEgress(f *egressFlags, log *slog.Logger) (*egressSetup, error) {
	open, err := parsePrefixes(f.open)
	if err != nil {
		return nil, fmt.Errorf("--egress-open: %w", err)
	}
	up := f.dnsUpstream
	if up == "" {
		if up, err = systemResolver("/etc/resolv.conf"); err != nil {
			return nil, fmt.Errorf("--dns-upstream: %w", err)
		}
	}
	if err := enableUplinks(f.uplinks, log); err != nil {
		return nil, err
	}
	pc, ln, port, err := dnsfilter.Listen("0.0.0.0", uint16(f.dnsPort))
	if err != nil {
		return nil, err
	}
	gl, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", f.guardPort))
	if err != nil {
		pc.Close()
		ln.Close()
		return nil, fmt.Errorf("--guard-port: %w", err)
	}
	tun, err := openTunnel(&f.tunnel, int(f.maxConns))
	if err != nil {
		pc.Close()
		ln.Close()
		gl.Close()
		return nil, err
	}
	return &egressSetup{pc: pc, ln: ln, guardLn: gl, tunnel: tun, upstream: up, res: &egress.Resolutions{},
		cfg: network.Egress{DNSPort: port, GuardPort: uint16(gl.Addr().(*net.TCPAddr).Port), Open: open,
			TunnelPort: tun.port(), ConnRate: uint32(f.connRate), MaxConns: uint32(f.maxConns)}}, nil
}

// forget drops what the egress path holds of a sandbox whose network went:
// its resolutions and its tunnelled connections.
func (e *egressSetup) forget(id string) {
	e.res.Forget(id)
	e.tunnel.forget(id)
}

func (e *egressSetup) close() {
	e.pc.Close()
	e.ln.Close()
	e.guardLn.Close()
	e.tunnel.ln.Close()
}

// serveDNS runs the DNS filter for nw's sandboxes until ctx ends: it
// answers by each sandbox's policy, opens resolved addresses in the
// kernel before answering, and audits every query with the sandbox id.
func (e *egressSetup) serveDNS(ctx context.Context, nw *network.Manager, aud auditor, log *slog.Logger) {
	dns := &dnsfilter.Filter{
		Upstream: e.upstream, Lookup: nw.PolicyOf, MaxTTL: time.Hour,
		Resolved: func(sb, name string, addrs []netip.Addr, ttl time.Duration) {
			e.res.Add(sb, name, addrs, ttl) // the guard knows before the kernel redirects
			if err := nw.AddResolved(sb, addrs, ttl); err != nil {
				log.Error("dns: open resolved addresses", "sandbox", sb, "name", name, "err", err)
			}
		},
		Log: func(sb, name, qtype, verdict string) {
			log.Debug("dns", "sandbox", sb, "name", name, "type", qtype, "verdict", verdict)
			if e.obs != nil {
				e.obs.DNSQuery(verdict)
			}
			if aud != nil {
				_ = aud.Append("dns", sb, "", map[string]string{"name": name, "type": qtype, "verdict": verdict})
			}
		},
	}
	log.Info("dns filter", "port", e.cfg.DNSPort, "upstream", e.upstream)
	if err := dns.Serve(ctx, e.pc, e.ln); err != nil {
		log.Error("dns filter stopped", "err", err)
	}
}

// serveGuard runs the SNI/Host guard until ctx ends: connections of
// domain-policy sandboxes to resolved addresses (TCP 80/443) are forwarded
// only if the name they state resolved to that address for that sandbox.
// Refusals are logged and audited.
func (e *egressSetup) serveGuard(ctx context.Context, nw *network.Manager, aud auditor, log *slog.Logger) {
	g := &guard.Guard{Lookup: nw.PolicyOf, Resolved: e.res.Has, Log: log, Intercept: e.intercept, Never: []netip.Prefix{nw.Subnet()},
		Admit: e.admit,
		Blocked: func(sb, dst, reason string) {
			log.Info("egress blocked", "sandbox", sb, "dst", dst, "reason", reason)
			if e.obs != nil {
				e.obs.EgressDenied(reason)
			}
			if aud != nil {
				_ = aud.Append("egress", sb, "", map[string]string{"dst": dst, "verdict": "blocked", "reason": reason})
			}
		}}
	log.Info("egress guard", "port", e.cfg.GuardPort)
	if err := g.Serve(ctx, e.guardLn); err != nil {
		log.Error("egress guard stopped", "err", err)
	}
}

// auditor is the audit log as the DNS filter uses it.
type auditor interface {
	Append(kind, sandbox, actor string, fields map[string]string) error
}

func enableUplinks(spec string, log *slog.Logger) error {
	var links []string
	switch spec {
	case "none":
		return nil
	case "auto", "":
		var err error
		if links, err = network.DefaultRouteLinks(); err != nil {
			return err
		}
	default:
		links = strings.Split(spec, ",")
	}
	log.Info("egress uplinks (IPv4 forwarding on)", "links", links)
	return network.EnableForwarding(links...)
}

func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// systemResolver returns the first nameserver of a resolv.conf as ip:53.
func systemResolver(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == "nameserver" {
			if a, err := netip.ParseAddr(fs[1]); err == nil {
				return netip.AddrPortFrom(a, 53).String(), nil
			}
		}
	}
	return "", fmt.Errorf("no nameserver in %s", path)
}
