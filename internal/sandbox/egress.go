package sandbox

import (
	"context"
	"fmt"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/store"
)

// maxNetRules bounds allowOut + denyOut, so one policy stays small.
const maxNetRules = 1000

// NetworkPolicy is the egress policy of a sandbox's network settings:
// E2B's allow_internet_access and the allowOut, denyOut and egressProxy of
// n (nil: none). The api calls it once at the edge to validate a request
// (bad rules are ErrInvalid); the manager derives the policy it enforces
// from the same typed settings. A proxy password must be open (see
// recordPolicy for a record's sealed one).
func NetworkPolicy(allowNet *bool, n *store.Network) (egress.Policy, error) {
	if n == nil {
		n = &store.Network{}
	}
	if len(n.AllowOut)+len(n.DenyOut) > maxNetRules {
		return egress.Policy{}, fmt.Errorf("%w: more than %d network rules", ErrInvalid, maxNetRules)
	}
	p, err := egress.Parse(allowNet, n.AllowOut, n.DenyOut)
	if err == nil && n.EgressProxy != nil {
		p.Proxy, err = parseProxy(n.EgressProxy)
	}
	if err != nil {
		return p, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return p, nil
}

// applyPolicy puts the policy recorded in sb's record into the kernel.
func (m *Manager) applyPolicy(ctx context.Context, id string, allowNet *bool, network *store.Network) error {
	p, err := m.recordPolicy(allowNet, network)
	if err != nil {
		return err
	}
	if err := m.network.SetPolicy(ctx, id, p); err != nil {
		return fmt.Errorf("sandbox %s: egress policy: %w", id, err)
	}
	return nil
}

// UpdateNetwork replaces the egress settings of a sandbox (E2B's PUT
// /sandboxes/{id}/network). For a running one the kernel goes first, so new
// connections follow the new policy at once, then the record (a restart
// re-applies it); if the record cannot be written the old policy is put
// back. A paused one has no network: its record changes and resume applies
// it. The sandbox's operation lock serialises this with pause, resume and
// other updates.
func (m *Manager) UpdateNetwork(ctx context.Context, id string, allowNet *bool, network *store.Network) error {
	if err := m.checkNetwork(ctx, allowNet, network); err != nil {
		return err
	}
	network = m.sealNetwork(network)
	sb, unlock, err := m.lockOp(id)
	if err != nil {
		return err
	}
	defer unlock()
	m.mu.Lock()
	old := sb.rec
	m.mu.Unlock()
	running := old.State == store.StateRunning
	if running {
		if err := m.applyPolicy(ctx, id, allowNet, network); err != nil {
			return err
		}
	}
	if err := m.updateRecord(ctx, sb, allowNet, network); err != nil {
		if running {
			_ = m.applyPolicy(context.WithoutCancel(ctx), id, old.AllowNet, old.Network)
		}
		return err
	}
	m.eventCtx(ctx, id, "network", "network", redactedJSON(network))
	return nil
}

// updateRecord stores the new network settings in sb's record. The caller
// holds sb.op; the record is written with Manager.mu released (Get and List
// never wait for the database).
func (m *Manager) updateRecord(ctx context.Context, sb *Sandbox, allowNet *bool, network *store.Network) error {
	m.mu.Lock()
	rec := sb.rec
	m.mu.Unlock()
	rec.AllowNet, rec.Network = allowNet, network
	if err := m.store.Put(ctx, &rec); err != nil {
		return err
	}
	m.mu.Lock()
	sb.rec.AllowNet, sb.rec.Network = allowNet, network
	m.mu.Unlock()
	return nil
}
