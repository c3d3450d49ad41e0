package network

import (
	"context"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Teardown removes the network of id: its nftables objects, its veth pair
// (deleting the host end deletes eth0) and its netns file, then releases
// its address once the host's connection tracking has forgotten its flows
// (conntrack.go). Missing pieces are not errors, so Teardown is idempotent and
// reaps the remains of a Setup cut short by a crash. A host link whose alias
// names another id is never touched. On error the id keeps its address and
// Teardown can be retried.
func (m *Manager) Teardown(ctx context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("%w: %q", ErrBadID, id)
	}
	unlock, err := m.ids.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if err := m.teardown(id); err != nil {
		return fmt.Errorf("network teardown %s: %w", id, err)
	}
	return nil
}

// teardown removes the rules while it deletes the link and the netns: the
// base rules fence every link of the prefix, with or without its own
// objects, so the order does not matter and the two kernel waits (an
// nftables commit, a veth unregistration) overlap. The caller holds id's
// lock.
func (m *Manager) teardown(id string) error {
	ifname := m.ifName(id)
	link, err := ownLink(ifname, id)
	if err != nil {
		return err
	}
	ip := m.sandboxIP(id)
	rules := make(chan error, 1)
	go func() { rules <- m.delRules(ifname, ip) }()
	var errs []error
	if link != nil {
		if err := netlink.LinkDel(link); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete link %s: %w", ifname, err))
		}
	}
	errs = append(errs, removeNS(m.nsPath(id)), m.unlessTableGone(<-rules))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if ip.IsValid() { // once the link is gone: no new flow can start
		if err := forgetSandboxFlows(ip); err != nil {
			return err
		}
	}
	m.forget(id)
	return nil
}

// ownLink returns the host link ifname if it belongs to id, nil if there is
// none, and an error if it belongs to another id.
func ownLink(ifname, id string) (netlink.Link, error) {
	link, err := netlink.LinkByName(ifname)
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find link %s: %w", ifname, err)
	}
	if a := link.Attrs().Alias; a != "" && a != id {
		return nil, fmt.Errorf("link %s belongs to sandbox %q", ifname, a)
	}
	return link, nil
}

// forget drops id from the manager's view and releases its address.
func (m *Manager) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.links[id]; ok {
		if i, ok := m.pool.reserve(l.HostIP); ok {
			m.pool.put(i)
		}
	}
	delete(m.links, id)
	delete(m.stray, id)
	delete(m.policies, id)
	delete(m.fresh, id)
	delete(m.resolved, id)
}
