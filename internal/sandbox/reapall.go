package sandbox

import "context"

// ReapAll is Recover for a node being emptied: it adopts nothing and reaps
// every recorded sandbox (running, paused, pooled, half-made) and every host
// resource no record owns, then returns how many records it reaped. It is
// for a daemon that is not serving (sbx serve --reap-all-and-exit): a stop
// by SIGTERM leaves sandboxes running for the next start to re-adopt, and
// this is how they are released when there will be no next start.
func (m *Manager) ReapAll(ctx context.Context) (int, error) {
	recs, err := m.store.List(ctx)
	if err != nil {
		return 0, err
	}
	var failed error
	for _, rec := range recs {
		m.event(rec.ID, "reaped", "reason", "reap-all")
		if err := m.reap(ctx, rec.ID, rec.Runtime, nil); err != nil && failed == nil {
			failed = err
		}
	}
	m.reapOrphans(ctx, map[string]bool{})
	m.reapImages(ctx)
	return len(recs), failed
}
