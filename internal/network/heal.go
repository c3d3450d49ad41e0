package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The table can vanish under a running daemon: an operator's
// `nft flush ruleset`, a firewall reload (`systemctl restart nftables`
// runs a file that starts with it), another tool. Every sandbox link is
// then unfenced (forwarded, and open to the host's services) and every
// later Setup fails. Heal notices it and rebuilds the table from the
// manager's memory, failing closed at every step:
//
//  1. the base table, in one batch: from then on every sandbox link is
//     fenced as one without objects (deny all, no DNS);
//  2. per live network, under its id's lock, one batch of its objects and
//     its last applied policy (none: deny all). A network whose batch
//     fails stays at step 1: it loses egress, never gains it;
//  3. the conntrack entries of flows the sandboxes opened (original
//     source a sandbox address) are forgotten: those opened while
//     unfenced would pass as established past the rebuilt rules. The
//     host's flows to the agents are kept.
//
// Addresses the DNS filter had resolved for domain allow-lists are
// restored with the rest of their lifetimes (the manager remembers what
// AddResolved opened, up to maxRemembered per sandbox; past that a sandbox
// reaches an address again once it resolves it again).

// ErrRulesLost is returned (wrapped) by Setup when the table was gone and
// could not be rebuilt: the node cannot fence a new sandbox now.
var ErrRulesLost = errors.New("network: the nftables table was removed and could not be rebuilt")

// Heal rebuilds the table if it is gone or flushed (its rules removed,
// `nft flush table`: the table's marker rule is missing; the kernel's table
// is then replaced in the first batch) and reports whether it did. It is
// cheap when the table is intact (two netlink requests) and safe to call
// periodically and concurrently: rebuilds are serialised.
func (m *Manager) Heal(ctx context.Context) (bool, error) {
	m.heal.Lock()
	defer m.heal.Unlock()
	exists, intact, err := m.tableState()
	if err != nil || intact {
		return false, err
	}
	m.rebuilds.Add(1)
	restored, failed, err := m.rebuild(ctx, exists)
	what := "removed"
	if exists {
		what = "flushed"
	}
	m.log().Error("nftables table was "+what+" under the daemon (nft flush ruleset or flush table, a firewall reload?): rebuilt it from memory",
		"table", m.cfg.Table, "sandboxes_restored", restored, "sandboxes_fenced", failed, "err", err)
	return true, err
}

// Rebuilds is the number of times Heal found the table gone.
func (m *Manager) Rebuilds() uint64 { return m.rebuilds.Load() }

func (m *Manager) log() *slog.Logger {
	if m.cfg.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.cfg.Log
}

// tableExists reports whether the table is in the kernel.
func (m *Manager) tableExists() (bool, error) {
	c, err := nftables.New()
	if err != nil {
		return false, fmt.Errorf("nftables: %w", err)
	}
	_, err = c.ListTableOfFamily(m.cfg.Table, nftables.TableFamilyINet)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("nftables list table %s: %w", m.cfg.Table, err)
	}
	return true, nil
}

// tableState reports whether the table is in the kernel and whether it is
// intact: its marker rule (chainMark) is there.
func (m *Manager) tableState() (exists, intact bool, err error) {
	if exists, err = m.tableExists(); err != nil || !exists {
		return exists, false, err
	}
	c, err := nftables.New()
	if err != nil {
		return true, false, fmt.Errorf("nftables: %w", err)
	}
	rules, err := c.GetRules(m.table(), markChain(m.table()))
	if errors.Is(err, unix.ENOENT) {
		return true, false, nil
	}
	if err != nil {
		return true, false, fmt.Errorf("nftables list chain %s: %w", chainMark, err)
	}
	return true, len(rules) > 0, nil
}

// unlessTableGone is err, or nil when the table is gone: with it went
// every object a teardown failed to remove (the next Heal restores only
// the networks still live).
func (m *Manager) unlessTableGone(err error) error {
	if err == nil {
		return nil
	}
	if ok, terr := m.tableExists(); terr == nil && !ok {
		return nil
	}
	return err
}

// rebuild runs steps 1 to 3, replacing the kernel's table if it still
// exists; failed counts the networks left at step 1.
func (m *Manager) rebuild(ctx context.Context, replace bool) (restored, failed int, err error) {
	if err := m.installTable(replace); err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrRulesLost, err)
	}
	var errs []error
	for _, l := range m.snapshot() {
		switch err := m.restore(ctx, l.ID); {
		case err != nil:
			failed++
			errs = append(errs, err)
		default:
			restored++
		}
	}
	errs = append(errs, m.forgetSandboxOpened())
	return restored, failed, errors.Join(errs...)
}

// restore installs id's objects and its policy in one batch, under id's
// lock; an id torn down meanwhile is skipped.
func (m *Manager) restore(ctx context.Context, id string) error {
	l, unlock, err := m.lockLink(ctx, id)
	if errors.Is(err, ErrNoNetwork) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	m.batchAdd(c, l.HostIf, l.SandboxIP)
	if p, ok := m.policy(id); ok {
		if err := m.batchPolicy(c, l.HostIf, p, false); err != nil {
			return fmt.Errorf("restore policy of %s: %w", id, err)
		}
		if els := m.resolvedElements(id); p.DenyAll && len(els) > 0 {
			_, _, resolved := m.sandboxSets(l.HostIf)
			if err := c.SetAddElements(resolved, els); err != nil {
				return fmt.Errorf("restore resolved addresses of %s: %w", id, err)
			}
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("restore rules of %s: %w", id, err)
	}
	return nil
}

// forgetSandboxOpened forgets the flows whose original source is the
// sandbox address of a live network (one dump of the conntrack table).
func (m *Manager) forgetSandboxOpened() error {
	sb := map[netip.Addr]bool{}
	for _, l := range m.snapshot() {
		sb[l.SandboxIP] = true
	}
	return forgetFlows(openedBy(sb))
}

// openedBy matches the flows whose original source is in its set.
type openedBy map[netip.Addr]bool

// MatchConntrackFlow implements netlink.CustomConntrackFilter.
func (o openedBy) MatchConntrackFlow(fl *netlink.ConntrackFlow) bool {
	a, ok := netip.AddrFromSlice(fl.Forward.SrcIP)
	return ok && o[a.Unmap()]
}
