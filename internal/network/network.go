// Package network gives every sandbox its own network namespace joined to
// the host by a routed veth pair (no bridge: sandboxes cannot see each other
// at layer 2 or 3), and keeps the fail-closed nftables rules that stop
// anything initiated inside a sandbox from reaching the host or leaving it.
//
// All state lives in the kernel: the netns bind mount (/run/netns/sbx-<id>),
// the host-side link (named from the id, its alias holding the full id) and
// its address. A new Manager rebuilds its view from the links, so it never
// disagrees with reality after a daemon restart.
package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
)

// Config of the manager; zero fields get defaults.
type Config struct {
	Subnet   netip.Prefix // pool of /30s, default 10.200.0.0/16
	NetNSDir string       // default /run/netns
	IfPrefix string       // host-side link prefix, default "sbx" (≤ 3 chars)
	Table    string       // nftables table (family inet), default "sbx"
}

// Link is a sandbox's network.
type Link struct {
	ID        string
	NetNSPath string
	HostIf    string
	HostIP    netip.Addr
	SandboxIP netip.Addr
}

// Manager sets up and tears down sandbox networks. mu guards links and used.
type Manager struct {
	cfg   Config
	mu    sync.Mutex
	links map[string]*Link // by sandbox id
	used  map[int]string   // /30 index → sandbox id
}

// New ensures the nftables table and rebuilds state from existing links.
func New(cfg Config) (*Manager, error) {
	if !cfg.Subnet.IsValid() {
		cfg.Subnet = netip.MustParsePrefix("10.200.0.0/16")
	}
	if !cfg.Subnet.Addr().Is4() || cfg.Subnet.Bits() > 28 {
		return nil, fmt.Errorf("network: subnet %s must be IPv4 and at least a /28", cfg.Subnet)
	}
	cfg.Subnet = cfg.Subnet.Masked()
	if cfg.NetNSDir == "" {
		cfg.NetNSDir = "/run/netns"
	}
	if cfg.IfPrefix == "" {
		cfg.IfPrefix = "sbx"
	}
	if cfg.Table == "" {
		cfg.Table = "sbx"
	}
	if len(cfg.IfPrefix) > 3 {
		return nil, fmt.Errorf("network: interface prefix %q longer than 3 chars", cfg.IfPrefix)
	}
	m := &Manager{cfg: cfg, links: map[string]*Link{}, used: map[int]string{}}
	if err := os.MkdirAll(cfg.NetNSDir, 0o755); err != nil {
		return nil, err
	}
	if err := m.ensureTable(); err != nil {
		return nil, err
	}
	return m, m.rescan()
}

// ifName is the host-side link name of id: prefix + first 12 chars.
func (m *Manager) ifName(id string) string { return m.cfg.IfPrefix + id[:min(12, len(id))] }

func (m *Manager) nsPath(id string) string { return filepath.Join(m.cfg.NetNSDir, "sbx-"+id) }

// slots is the number of /30s in the pool (the first is skipped).
func (m *Manager) slots() int { return 1 << (32 - m.cfg.Subnet.Bits() - 2) }

func (m *Manager) addrs(i int) (host, sandbox netip.Addr) {
	b := m.cfg.Subnet.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(i) * 4
	h := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v + 1)})
	s := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v + 2)})
	return h, s
}

// allocate reserves a free /30 for id. m.mu must be held.
func (m *Manager) allocateLocked(id string) (int, error) {
	for i := 1; i < m.slots(); i++ {
		if _, ok := m.used[i]; !ok {
			m.used[i] = id
			return i, nil
		}
	}
	return 0, fmt.Errorf("network: address pool %s exhausted", m.cfg.Subnet)
}

func (m *Manager) index(a netip.Addr) int {
	off := ipv4(a) - ipv4(m.cfg.Subnet.Addr())
	return int(off / 4)
}

func ipv4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// rescan rebuilds links and used from the host's sbx links.
func (m *Manager) rescan() error {
	links, err := netlink.LinkList()
	if err != nil {
		return fmt.Errorf("list links: %w", err)
	}
	for _, l := range links {
		a := l.Attrs()
		if !strings.HasPrefix(a.Name, m.cfg.IfPrefix) || a.Alias == "" || m.ifName(a.Alias) != a.Name {
			continue
		}
		addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
		for _, ad := range addrs {
			host, ok := netip.AddrFromSlice(ad.IP.To4())
			if !ok || !m.cfg.Subnet.Contains(host) {
				continue
			}
			i := m.index(host)
			h, s := m.addrs(i)
			m.used[i] = a.Alias
			m.links[a.Alias] = &Link{ID: a.Alias, NetNSPath: m.nsPath(a.Alias), HostIf: a.Name, HostIP: h, SandboxIP: s}
		}
	}
	return nil
}

// Lookup returns the network of id, if it exists.
func (m *Manager) Lookup(id string) (*Link, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.links[id]
	return l, ok
}

// List returns the ids with network state: links, and netns files whose link
// is gone (left by a crash between the two steps).
func (m *Manager) List() []string {
	m.mu.Lock()
	seen := map[string]bool{}
	for id := range m.links {
		seen[id] = true
	}
	m.mu.Unlock()
	if ents, err := os.ReadDir(m.cfg.NetNSDir); err == nil {
		for _, e := range ents {
			if id, ok := strings.CutPrefix(e.Name(), "sbx-"); ok {
				seen[id] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	return out
}

// Dial opens a TCP connection from the host to port inside the sandbox.
func (l *Link) Dial(ctx context.Context, port int) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	return d.DialContext(ctx, "tcp", netip.AddrPortFrom(l.SandboxIP, uint16(port)).String())
}

var errBadID = errors.New("network: bad sandbox id")
