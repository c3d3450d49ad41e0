package network

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables"
)

// syncRules makes the table agree with the links found by rescan: every
// adopted network gets its objects (a Setup cut short between link and
// rules is completed), and objects of links that are gone or stray are
// removed. Batches of chunkSize; each object's change is atomic.
func (m *Manager) syncRules() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	b := &chunked{c: c}
	live := map[string]bool{}
	for _, l := range m.snapshot() {
		live[l.HostIf] = true
		m.batchAdd(c, l.HostIf, l.SandboxIP)
		if err := b.tickN(sandboxMsgs); err != nil {
			return err
		}
	}
	if err := m.batchDelDead(b, live); err != nil {
		return err
	}
	if err := b.flush(); err != nil {
		return fmt.Errorf("nftables sync table %s: %w", m.cfg.Table, err)
	}
	return nil
}

// snapshot returns the complete networks.
func (m *Manager) snapshot() []*Link {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Link, 0, len(m.links))
	for _, l := range m.links {
		out = append(out, l)
	}
	return out
}

// batchDelDead queues the removal of the per-sandbox objects (set and map
// elements, then chains) whose interface is not live: exactly those listed,
// whatever they hold.
func (m *Manager) batchDelDead(b *chunked, live map[string]bool) error {
	c := b.c
	addrs, vmap := m.sets()
	_, redir := m.egressSets()
	for _, s := range []*nftables.Set{vmap, m.guardMap(), addrs, redir, m.openSet(), m.proxiedSet()} {
		els, err := c.GetSetElements(s)
		if err != nil {
			return fmt.Errorf("nftables list %s: %w", s.Name, err)
		}
		for _, e := range els {
			if !live[ifOfKey(e.Key)] {
				_ = c.SetDeleteElements(s, []nftables.SetElement{{Key: e.Key}})
				if err := b.tick(); err != nil {
					return err
				}
			}
		}
	}
	return m.batchDelDeadObjects(b, live)
}

// batchDelDeadObjects queues the removal of the per-sandbox chains (all
// flushed first: sandbox-L jumps to policy-L), then sets, of dead links.
func (m *Manager) batchDelDeadObjects(b *chunked, live map[string]bool) error {
	c := b.c
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return fmt.Errorf("nftables list chains: %w", err)
	}
	var dead []*nftables.Chain
	for _, ch := range chains {
		if ch.Table.Name == m.cfg.Table && m.deadObject(ch.Name, live, chainName(""), policyChainName(""), guardChainName("")) {
			c.FlushChain(ch)
			dead = append(dead, ch)
			if err := b.tick(); err != nil {
				return err
			}
		}
	}
	for _, ch := range dead {
		c.DelChain(ch)
		if err := b.tick(); err != nil {
			return err
		}
	}
	sets, err := c.GetSets(m.table())
	if err != nil {
		return fmt.Errorf("nftables list sets: %w", err)
	}
	for _, s := range sets {
		if m.deadObject(s.Name, live, setPrefixes...) {
			c.DelSet(s)
			if err := b.tick(); err != nil {
				return err
			}
		}
	}
	return nil
}

// deadObject reports whether name is one of prefixes followed by a link
// name of this manager that is not live.
func (m *Manager) deadObject(name string, live map[string]bool, prefixes ...string) bool {
	for _, p := range prefixes {
		if ifname, ok := strings.CutPrefix(name, p); ok && strings.HasPrefix(ifname, m.cfg.IfPrefix) {
			return !live[ifname]
		}
	}
	return false
}

// sandboxIP is the sandbox address of id's network, if known.
func (m *Manager) sandboxIP(id string) netip.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.links[id]; ok {
		return l.SandboxIP
	}
	return netip.Addr{}
}
