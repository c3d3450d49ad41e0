// Package cluster is a node daemon's membership of a cluster: its lease in
// the shared store's node registry (internal/store, nodes.go), taken at
// start, renewed by heartbeats, released on a clean stop, and the
// collection of other nodes whose leases ran out.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// Registry is the part of the store a Member uses.
type Registry interface {
	Register(ctx context.Context, n *store.Node, ttl time.Duration) (store.Lease, error)
	Renew(ctx context.Context, l store.Lease, n *store.Node, ttl time.Duration) (store.Lease, error)
	Release(ctx context.Context, l store.Lease) error
	ExpireNodes(ctx context.Context) ([]string, error)
}

// Member holds one node's lease. Report is called for every heartbeat and
// must be safe to call from Run's goroutine.
type Member struct {
	reg    Registry
	ttl    time.Duration
	report func() *store.Node
	log    *slog.Logger

	mu    sync.Mutex // guards lease
	lease store.Lease
}

// Join registers the node report() describes with a lease of ttl. A lease
// of the same id still held (a crashed incarnation's, not yet expired) is
// waited for, up to twice the ttl; a lease a live daemon keeps renewing
// therefore fails Join with store.ErrLeaseHeld.
func Join(ctx context.Context, reg Registry, ttl time.Duration, report func() *store.Node, log *slog.Logger) (*Member, error) {
	m := &Member{reg: reg, ttl: ttl, report: report, log: log}
	deadline := time.Now().Add(2*ttl + time.Second)
	for {
		l, err := reg.Register(ctx, report(), ttl)
		if err == nil {
			m.lease = l
			log.Info("joined the cluster", "node", l.Node, "fencing-token", l.Token, "lease-ttl", ttl)
			return m, nil
		}
		if !errors.Is(err, store.ErrLeaseHeld) || time.Now().After(deadline) {
			return nil, fmt.Errorf("join cluster: %w", err)
		}
		log.Info("node lease still held (a previous run?); waiting for it to expire", "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(ttl / 4):
		}
	}
}

// Lease returns the current lease.
func (m *Member) Lease() store.Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease
}

// Run heartbeats every third of the ttl until ctx ends (nil) or the lease
// is lost (an error wrapping store.ErrFenced): refused by the store, or
// not renewed before it ran out (the store unreachable). Each heartbeat
// also expires other nodes whose leases ran out.
func (m *Member) Run(ctx context.Context) error {
	tick := time.NewTicker(m.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := m.beat(ctx); err != nil {
			return err
		}
	}
}

// beat renews the lease once and collects expired nodes.
func (m *Member) beat(ctx context.Context) error {
	cur := m.Lease()
	l, err := m.reg.Renew(ctx, cur, m.report(), m.ttl)
	switch {
	case errors.Is(err, store.ErrFenced):
		return err
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil && time.Now().After(cur.Expires):
		return fmt.Errorf("lease not renewed before it ran out (%w): %w", store.ErrFenced, err)
	case err != nil:
		m.log.Warn("heartbeat failed; retrying", "err", err, "lease-expires", cur.Expires)
		return nil
	}
	m.mu.Lock()
	m.lease = l
	m.mu.Unlock()
	ids, err := m.reg.ExpireNodes(ctx)
	if err != nil && ctx.Err() == nil {
		m.log.Warn("expire nodes", "err", err)
	}
	for _, id := range ids {
		m.log.Warn("node lease expired: node fenced, its sandboxes marked lost", "node", id)
	}
	return nil
}

// Leave releases the lease (a clean stop): the node's records stay for its
// next start.
func (m *Member) Leave(ctx context.Context) error {
	return m.reg.Release(ctx, m.Lease())
}
