// Package network gives every sandbox its own network namespace joined to
// the host by a routed veth pair (no bridge: sandboxes cannot see each other
// at layer 2 or 3), and keeps the fail-closed nftables rules that stop
// anything initiated inside a sandbox from reaching the host or leaving it.
//
// All state lives in the kernel, so it holds while the daemon is down and a
// new Manager rebuilds its view from it (it never disagrees with reality):
//
//   - the netns bind mount <NetNSDir>/<IfPrefix>-<id> (visible to `ip netns`);
//   - the host-side link <IfPrefix><12 chars of sha256(id)>, its alias
//     (IFLA_IFALIAS) holding the full id, its IPv4 address the host side
//     (.1) of the sandbox's /30, whose .2 is the sandbox's eth0;
//   - the sandbox's objects in the nftables table (see nft.go).
//
// IPv4 forwarding is enabled on each sandbox's host link (and, by the
// daemon, on the uplinks): what may be forwarded is decided by nftables
// alone, per sandbox (egress.go), and masqueraded to the outside.
package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Errors returned by the Manager; test with errors.Is.
var (
	ErrBadID     = errors.New("network: bad sandbox id")
	ErrExhausted = errors.New("network: address pool exhausted")
)

// Config of the manager; zero fields get defaults.
type Config struct {
	Subnet   netip.Prefix // IPv4 pool of /30s, default 10.200.0.0/16
	NetNSDir string       // bind mounts of the netns, default /run/netns
	IfPrefix string       // 1–3 chars of [a-z0-9]: link, netns and chain names; default "sbx"
	Table    string       // nftables table (family inet), default "sbx"
	Egress   Egress       // the path out of the sandboxes (egress.go)
	Log      *slog.Logger // where Heal reports a rebuild (nil: nowhere)
}

// Link is a sandbox's network. It is immutable once returned.
type Link struct {
	ID        string
	NetNSPath string
	HostIf    string     // host side of the veth; the sandbox side is eth0
	HostIP    netip.Addr // host side address, the sandbox's gateway
	SandboxIP netip.Addr // eth0's address inside the netns
}

// Dial opens a TCP connection from the host to port inside the sandbox.
func (l *Link) Dial(ctx context.Context, port int) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	return d.DialContext(ctx, "tcp", netip.AddrPortFrom(l.SandboxIP, uint16(port)).String())
}

// Manager sets up and tears down sandbox networks. It is safe for concurrent
// use: operations on distinct ids run in parallel, operations on one id are
// serialised by ids. mu guards links and pool and is never held across a
// kernel call.
type Manager struct {
	cfg   Config
	ids   idLocks
	mu    sync.Mutex
	links map[string]*Link // by sandbox id: complete networks only
	stray map[string]bool  // ids with a host link but no usable address (to reap)
	pool  *pool
	// policies holds the egress policy applied to each network by
	// SetPolicy; a network without one is fenced (deny all, no DNS).
	policies map[string]egress.Policy
	// fresh holds networks set up by this manager that never had a policy:
	// their egress sets are known empty (SetPolicy then only adds).
	fresh map[string]bool
	// resolved holds, per network, the addresses its DNS filter opened
	// (AddResolved) that its current policy still has: a rebuild restores
	// them (resolved.go).
	resolved map[string]resolvedMemo
	// heal is held by Heal for a rebuild, and shared by a Setup from its
	// rules until its link is in links (a rebuild restores it or sees it).
	heal     sync.RWMutex
	rebuilds atomic.Uint64
}

// New ensures the nftables table and its base chains (keeping the
// per-sandbox objects of live sandboxes) and rebuilds the manager's view
// from the kernel: existing links are adopted, their addresses reserved and
// their nftables objects restored; nftables objects without a link are
// removed, and so are the conntrack entries of the subnet's addresses
// that no live network holds.
func New(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, links: map[string]*Link{}, stray: map[string]bool{}, pool: newPool(cfg.Subnet),
		policies: map[string]egress.Policy{}, fresh: map[string]bool{}, resolved: map[string]resolvedMemo{}}
	if err := os.MkdirAll(cfg.NetNSDir, 0o755); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	if err := prepareNetNSDir(cfg.NetNSDir); err != nil {
		return nil, err
	}
	if err := m.ensureTable(); err != nil {
		return nil, err
	}
	if err := m.rescan(); err != nil {
		return nil, err
	}
	if err := m.forgetStaleFlows(); err != nil {
		return nil, err
	}
	return m, m.syncRules()
}

func (c Config) withDefaults() (Config, error) {
	if !c.Subnet.IsValid() {
		c.Subnet = netip.MustParsePrefix("10.200.0.0/16")
	}
	if !c.Subnet.Addr().Is4() || c.Subnet.Bits() > 28 {
		return c, fmt.Errorf("network: subnet %s must be IPv4 and at least a /28", c.Subnet)
	}
	c.Subnet = c.Subnet.Masked()
	if c.NetNSDir == "" {
		c.NetNSDir = "/run/netns"
	}
	if c.IfPrefix == "" {
		c.IfPrefix = "sbx"
	}
	if c.Table == "" {
		c.Table = "sbx"
	}
	c.Egress = c.Egress.withDefaults()
	if len(c.IfPrefix) > 3 || !validName(c.IfPrefix) || c.IfPrefix[0] < 'a' {
		return c, fmt.Errorf("network: interface prefix %q must be 1-3 chars of [a-z0-9], the first a letter", c.IfPrefix)
	}
	if nftKeywords[c.IfPrefix] {
		return c, fmt.Errorf("network: interface prefix %q is an nft keyword: the nft command could not name its table (nft list table inet %s fails to parse); pick another", c.IfPrefix, c.IfPrefix)
	}
	return c, nil
}
