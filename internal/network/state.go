package network

import (
	"net/netip"
	"os"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
)

// Lookup returns the network of id, if it is complete. After a restart it
// finds every network adopted from the kernel by New.
func (m *Manager) Lookup(id string) (*Link, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.links[id]
	return l, ok
}

// List returns, sorted, the ids that have any network state on the host:
// complete networks, host links without a usable address and netns files
// without a link (both left by a crash in the middle of Setup). A caller
// reaps the ids it does not know with Teardown.
func (m *Manager) List() []string {
	seen := map[string]bool{}
	m.mu.Lock()
	for id := range m.links {
		seen[id] = true
	}
	for id := range m.stray {
		seen[id] = true
	}
	m.mu.Unlock()
	if ents, err := os.ReadDir(m.cfg.NetNSDir); err == nil {
		for _, e := range ents {
			if id, ok := m.idFromNSFile(e.Name()); ok {
				seen[id] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// rescan rebuilds links, stray and the pool from the host's links: a link
// is ours if its name is the prefix plus the hash of its alias.
func (m *Manager) rescan() error {
	links, err := retryDump(netlink.LinkList)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, link := range links {
		a := link.Attrs()
		if !strings.HasPrefix(a.Name, m.cfg.IfPrefix) || !validID(a.Alias) || m.ifName(a.Alias) != a.Name {
			continue
		}
		if l := m.adopt(link); l != nil {
			m.links[l.ID] = l
		} else {
			m.stray[a.Alias] = true
		}
	}
	return nil
}

// adopt returns the Link of a host link whose address is the host side of a
// free slot of the pool, reserving the slot; nil otherwise. m.mu is held.
func (m *Manager) adopt(link netlink.Link) *Link {
	addrs, _ := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(link, netlink.FAMILY_V4) })
	for _, ad := range addrs {
		a, ok := netip.AddrFromSlice(ad.IP.To4())
		if ones, _ := ad.Mask.Size(); !ok || ones != 30 {
			continue
		}
		i, ok := m.pool.reserve(a)
		if !ok {
			continue
		}
		h, s := m.pool.addrs(i)
		id := link.Attrs().Alias
		return &Link{ID: id, NetNSPath: m.nsPath(id), HostIf: link.Attrs().Name, HostIP: h, SandboxIP: s}
	}
	return nil
}
