package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/store"
)

// Recover re-adopts every recorded sandbox that still runs and whose host
// resources are all present, and reaps everything else: half-made creates,
// sandboxes whose runtime, network or layer is gone, expired deadlines (a
// deferred pause's next try is no end: it is tried at once), and host
// resources that no record owns. It returns the number re-adopted.
func (m *Manager) Recover(ctx context.Context) (int, error) {
	recs, err := m.store.List(ctx)
	if err != nil {
		return 0, err
	}
	known := map[string]bool{}
	adopted := 0
	for _, rec := range recs {
		known[rec.ID] = true
		if err := m.adopt(ctx, rec); err != nil {
			m.reapUnadopted(ctx, rec, err)
			continue
		}
		m.event(rec.ID, "adopted", "team", rec.Team)
		adopted++
	}
	m.reapOrphans(ctx, known)
	m.reapImages(ctx)
	return adopted, nil
}

// errDied: a recorded sandbox's init ended while the daemon was down.
var errDied = errors.New("sandbox init exited while the daemon was down")

// reapUnadopted reaps a record Recover could not adopt (why); one that died
// on its own is counted as a death. Its traffic is then answered as every
// unknown sandbox's (the proxy's 502 "The sandbox was not found", as E2B).
func (m *Manager) reapUnadopted(ctx context.Context, rec *store.Sandbox, why error) {
	m.log.Warn("reaping sandbox", "sandbox", rec.ID, "reason", why)
	m.event(rec.ID, "reaped", "reason", why.Error())
	if errors.Is(why, errDied) {
		m.observer().Died(rec.Runtime)
	}
	_ = m.reap(ctx, rec.ID, rec.Runtime, nil)
}

// adopt verifies one record against the host and registers it.
func (m *Manager) adopt(ctx context.Context, rec *store.Sandbox) error {
	if rec.State == store.StatePaused {
		return m.adoptPaused(ctx, rec)
	}
	if rec.State == store.StateResuming {
		return m.adoptResuming(ctx, rec)
	}
	if rec.State != store.StateRunning {
		return fmt.Errorf("state %q", rec.State)
	}
	// A deferred pause (pauseretry.go) whose next try fell due while the
	// daemon was down is tried at once (armLocked below fires now): the
	// sandbox is paused, deferred again or, past its ceiling, killed by
	// expire, never reaped for a retry time it was only waiting for.
	if !time.Now().Before(rec.EndAt) && rec.Persist.PauseDeferredSince.IsZero() {
		return errors.New("deadline passed while the daemon was down")
	}
	rt, ok := m.runtimes[rec.Runtime]
	if !ok {
		return fmt.Errorf("runtime %q not configured", rec.Runtime)
	}
	rsb, err := rt.Load(ctx, rec.ID)
	if err != nil {
		return err
	}
	st, err := rsb.State(ctx)
	if p, ok := rsb.(runtime.Pauser); ok && err == nil && st == runtime.StatePaused {
		// Frozen by a capture (fork, snapshot) the daemon died in: thaw.
		if p.Resume(ctx) == nil {
			st = runtime.StateRunning
		}
	}
	if err == nil && st == runtime.StateStopped {
		return errDied
	}
	if err != nil || st != runtime.StateRunning {
		return fmt.Errorf("runtime state %q: %v", st, err)
	}
	ni, ok := m.network.Lookup(rec.ID)
	if !ok {
		return errors.New("network is gone")
	}
	if _, ok := m.layers.Rootfs(rec.ID); !ok {
		return errors.New("writable layer is gone")
	}
	// The kernel kept the policy while the daemon was down; applying it
	// again gives the new process its view (the DNS filter's) and fails
	// closed: a sandbox whose policy cannot be applied is reaped.
	if err := m.applyPolicy(ctx, rec.ID, rec.AllowNet, rec.Network); err != nil {
		return err
	}
	base := fmt.Sprintf("http://%s:%d", ni.SandboxIP, m.cfg.AgentPort)
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := health(hctx, base); err != nil {
		return fmt.Errorf("agent does not answer: %w", err)
	}
	sb := &Sandbox{rec: *rec, rt: rsb, info: ni}
	sb.tmpl, _ = m.templateOf(rec) // defaults for a later re-init; a deleted template leaves none
	m.mu.Lock()
	m.sandboxes[rec.ID] = sb
	m.armLocked(sb)
	m.watchExit(sb)
	m.mu.Unlock()
	return nil
}

// reapOrphans releases (releaseHost) every id that holds host resources
// — a runtime sandbox, a layer, a network — but has no record in known.
func (m *Manager) reapOrphans(ctx context.Context, known map[string]bool) {
	for id, rts := range m.orphans(ctx, known) {
		m.log.Warn("reaping orphan host resources", "sandbox", id, "runtimes", rts)
		for _, rt := range rts {
			if err := m.releaseHost(ctx, id, rt, nil); err != nil {
				m.log.Warn("reap orphan", "sandbox", id, "err", err)
			}
		}
	}
}

// orphans maps each id a runtime, the layer store, the network or the
// runtimes' stray cgroups (runtime.StrayReaper) list and known does not
// hold to the runtimes that list it ("" if none does: releaseHost then
// kills what its cgroups hold).
func (m *Manager) orphans(ctx context.Context, known map[string]bool) map[string][]string {
	out := map[string][]string{}
	for name, rt := range m.runtimes {
		ids, err := rt.List(ctx)
		if err != nil {
			m.log.Warn("list runtime sandboxes", "runtime", name, "err", err)
		}
		for _, id := range ids {
			if !known[id] {
				out[id] = append(out[id], name)
			}
		}
	}
	ids, err := m.layers.List()
	if err != nil {
		m.log.Warn("list layers", "err", err)
	}
	for _, id := range append(append(ids, m.network.List()...), m.strays(ctx)...) {
		if !known[id] && out[id] == nil {
			out[id] = []string{""}
		}
	}
	return out
}

// strays is what the first runtime.StrayReaper lists (reapStray's).
func (m *Manager) strays(ctx context.Context) []string {
	for _, name := range slices.Sorted(maps.Keys(m.runtimes)) {
		if s, ok := m.runtimes[name].(runtime.StrayReaper); ok {
			ids, err := s.Strays(ctx)
			if err != nil {
				m.log.Warn("list stray cgroups", "runtime", name, "err", err)
			}
			return ids
		}
	}
	return nil
}
