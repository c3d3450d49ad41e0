package network

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/google/nftables"

	"github.com/sbx-dev/sbx/internal/egress"
)

// ErrNoNetwork is returned (wrapped) for an id without a complete network.
var ErrNoNetwork = fmt.Errorf("network: no such sandbox network")

// SetPolicy makes p the egress policy of id's sandbox, in one atomic
// nftables batch: its allow/deny sets and policy chain are rewritten, the
// addresses resolved under the old policy are dropped and its DNS redirect
// is switched on or off. It applies to new connections at once;
// established ones go on. On error the previous policy stays in force.
func (m *Manager) SetPolicy(ctx context.Context, id string, p egress.Policy) error {
	l, unlock, err := m.lockLink(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	m.mu.Lock()
	fresh := m.fresh[id]
	m.mu.Unlock()
	if err := m.batchPolicy(c, l.HostIf, p, fresh); err != nil {
		return fmt.Errorf("egress policy of %s: %w", id, err)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("egress policy of %s: nftables: %w", id, err)
	}
	m.mu.Lock()
	m.policies[id] = p
	delete(m.fresh, id)
	delete(m.resolved, id) // batchPolicy flushed the resolved set
	m.mu.Unlock()
	return nil
}

// lockLink takes id's lock and returns its link; the caller must unlock.
// An id without a network is ErrNoNetwork (and left unlocked).
func (m *Manager) lockLink(ctx context.Context, id string) (*Link, func(), error) {
	unlock, err := m.ids.lock(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	l, ok := m.Lookup(id)
	if !ok {
		unlock()
		return nil, nil, fmt.Errorf("%w: %s", ErrNoNetwork, id)
	}
	return l, unlock, nil
}

// Subnet is the sandbox subnet: other sandboxes and the host sides of
// their links, closed to a sandbox's egress whatever its range.
func (m *Manager) Subnet() netip.Prefix { return m.cfg.Subnet }

// PolicyOf finds the sandbox whose address is src and its policy; ok is
// false for an address that is no sandbox of this manager or a sandbox
// without a policy yet (the DNS filter then refuses everything).
func (m *Manager) PolicyOf(src netip.Addr) (id string, p egress.Policy, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, l := range m.links {
		if l.SandboxIP == src {
			p, ok = m.policies[id]
			return id, p, ok
		}
	}
	return "", egress.Policy{}, false
}

// AddResolved opens addrs (IPv4; others are ignored: links carry IPv4
// only) to id's sandbox for ttl, bounded by Egress.MinTTL and MaxTTL. An
// address already there gets the new lifetime. Only a deny-all policy
// (a domain allow-list) needs it; for others it does nothing.
func (m *Manager) AddResolved(id string, addrs []netip.Addr, ttl time.Duration) error {
	l, unlock, err := m.lockLink(context.Background(), id) // never between a SetPolicy's flush and its end
	if err != nil {
		return err
	}
	defer unlock()
	if p, ok := m.policy(id); !ok || !p.DenyAll {
		return nil
	}
	ttl = min(max(ttl, m.cfg.Egress.MinTTL), m.cfg.Egress.MaxTTL)
	var els []nftables.SetElement
	var v4 []netip.Addr
	for _, a := range addrs {
		if a = a.Unmap(); a.Is4() {
			k := a.As4()
			els = append(els, nftables.SetElement{Key: k[:], Timeout: ttl})
			v4 = append(v4, a)
		}
	}
	if len(els) == 0 {
		return nil
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	_, _, resolved := m.sandboxSets(l.HostIf)
	// Adding an element that exists renews its timeout (kernel ≥ 6.10; an
	// older one keeps the first lifetime). No removal: that would cost an
	// RCU grace period on every DNS answer.
	_ = c.SetAddElements(resolved, els)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("resolved addresses of %s: nftables: %w", id, err)
	}
	m.rememberResolved(id, v4, ttl)
	return nil
}

func (m *Manager) policy(id string) (egress.Policy, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.policies[id]
	return p, ok
}
