package network

import (
	"context"
	"errors"
	"fmt"
)

// Setup creates the network of sandbox id: its netns, the veth pair with
// both ends addressed and up, the sandbox's default route via the host side,
// and its nftables objects. The link is ready before any runtime starts in
// the netns (gVisor copies eth0's configuration at start).
//
// Setup is idempotent: for an id that already has a network it returns the
// existing Link. It is all or nothing: on any error (including a failure to
// install the sandbox's rules) every object made by this call is removed,
// and objects it did not make are left alone. Concurrent calls for one id
// are serialised.
func (m *Manager) Setup(ctx context.Context, id string) (*Link, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%w: %q", ErrBadID, id)
	}
	unlock, err := m.ids.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if l, ok := m.Lookup(id); ok {
		return l, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l, err := m.setup(id)
	if err != nil {
		return nil, fmt.Errorf("network setup %s: %w", id, err)
	}
	return l, nil
}

// setup allocates an address and builds the network, undoing what it made
// on error. The caller holds id's lock.
func (m *Manager) setup(id string) (*Link, error) {
	l, err := m.allocate(id)
	if err != nil {
		return nil, err
	}
	undo := undoStack{func() error { m.release(l); return nil }}
	rtnlMu.Lock()
	err = m.createNetwork(l, &undo)
	rtnlMu.Unlock()
	if err != nil {
		return nil, errors.Join(err, undo.run())
	}
	if err := m.addRulesHealing(l); err != nil {
		return nil, errors.Join(err, undo.run())
	}
	return l, nil
}

// addRulesHealing installs l's objects and records l as complete; if that
// fails because the table is gone, Heal rebuilds it and it is tried once
// more (ErrRulesLost if the rebuild failed).
func (m *Manager) addRulesHealing(l *Link) error {
	err := m.addRulesShared(l)
	if err == nil {
		return nil
	}
	healed, herr := m.Heal(context.Background())
	switch {
	case herr != nil && errors.Is(herr, ErrRulesLost):
		return fmt.Errorf("%w: %w", herr, err)
	case !healed:
		return err
	}
	return m.addRulesShared(l)
}

// addRulesShared is addRules and the record of l, under a shared heal.
func (m *Manager) addRulesShared(l *Link) error {
	m.heal.RLock()
	defer m.heal.RUnlock()
	if err := m.addRules(l); err != nil {
		return err
	}
	m.mu.Lock()
	m.links[l.ID] = l
	m.fresh[l.ID] = true
	m.mu.Unlock()
	return nil
}

// allocate reserves an address pair for id.
func (m *Manager) allocate(id string) (*Link, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, err := m.pool.get()
	if err != nil {
		return nil, err
	}
	h, s := m.pool.addrs(i)
	return &Link{ID: id, NetNSPath: m.nsPath(id), HostIf: m.ifName(id), HostIP: h, SandboxIP: s}, nil
}

// release returns l's address to the pool.
func (m *Manager) release(l *Link) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.pool.reserve(l.HostIP); ok {
		m.pool.put(i)
	}
}

// undoStack runs cleanups in reverse order.
type undoStack []func() error

func (u *undoStack) push(f func() error) { *u = append(*u, f) }

func (u undoStack) run() error {
	var errs []error
	for i := len(u) - 1; i >= 0; i-- {
		errs = append(errs, u[i]())
	}
	return errors.Join(errs...)
}
