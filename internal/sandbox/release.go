package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sbx-dev/sbx/internal/failpoint"
	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/store"
)

// releaseHost frees every host resource sandbox id may hold, in reverse
// order of creation: its runtime sandbox (processes, cgroups, runtime state,
// bundle) through rsb if the caller has the handle, else whatever runtime
// rtName's Load finds; when no runtime has state for id ("" or an
// unconfigured runtime, or Load finds nothing: a data dir deleted by hand)
// every process left in id's cgroups is killed and they are removed
// (reapStray);
// then its writable layer (overlay mount, disk quota, directories); then its
// network (netns, link, address, nftables rules, egress resolutions). Every
// kill, reap, failed create or restore, pause, Recover and ReapAll releases
// a sandbox's host side through it.
//
// Idempotent: a resource that is gone or was never made is not an error,
// and every step runs even if an earlier one failed, so it is safe on a
// half-made, half-released or released sandbox, and calling it again
// retries what failed. The error joins the steps' failures.
//
// It touches nothing else: not the record, images, the manager's map,
// deadline, pools or admission slots (their owners do), nor volumes (shared,
// mounted per volume, not per sandbox).
//
// Locks: it takes none and must not be called with m.mu held (its runtime,
// mount and netlink calls are slow). The caller owns id meanwhile: it holds
// sb.op, or id is not (or no longer) in m.sandboxes — a create, restore or
// pool refill in progress, a kill that removed it, Recover and ReapAll
// before serving.
func (m *Manager) releaseHost(ctx context.Context, id, rtName string, rsb runtime.Sandbox) error {
	var errs []error
	if rsb != nil {
		errs = append(errs, rsb.Delete(ctx)) // forced: kills whatever still runs
	} else if rt, ok := m.runtimes[rtName]; ok {
		errs = append(errs, m.deleteRuntime(ctx, rt, id))
	} else {
		errs = append(errs, m.reapStray(ctx, id))
	}
	errs = append(errs, failpoint.Hit("delete/before-layer"), m.layers.Remove(id))
	errs = append(errs, failpoint.Hit("delete/before-network"), m.network.Teardown(ctx, id))
	return errors.Join(errs...)
}

// deleteRuntime deletes what rt's Load finds for id; with nothing found it
// reaps what id's cgroups still hold (reapStray).
func (m *Manager) deleteRuntime(ctx context.Context, rt runtime.Runtime, id string) error {
	rsb, err := rt.Load(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		return m.reapStray(ctx, id)
	}
	if err != nil {
		return err
	}
	return rsb.Delete(ctx) // forced: kills whatever still runs
}

// reapStray kills whatever still runs in id's cgroups and removes them,
// through the first configured runtime that is a runtime.StrayReaper (they
// share the cgroup parent); with none, it does nothing. For an id that has
// no runtime state: the runtime cannot kill what it does not know.
func (m *Manager) reapStray(ctx context.Context, id string) error {
	for _, name := range slices.Sorted(maps.Keys(m.runtimes)) {
		if s, ok := m.runtimes[name].(runtime.StrayReaper); ok {
			return s.ReapStray(ctx, id)
		}
	}
	return nil
}

// reap ends sandbox id for good: its host resources (releaseHost, through
// rsb if not nil) and its paused image, then its record — deleted only when
// every step succeeded; otherwise the record stays (state reaping) and the
// next Recover retries, and a failure for want of file descriptors is
// retried meanwhile (retryReap). The caller owns id as for releaseHost.
func (m *Manager) reap(ctx context.Context, id, rtName string, rsb runtime.Sandbox) error {
	err := m.reapOnce(ctx, id, rtName, rsb)
	if shortOfDescriptors(err) {
		m.retryReap(context.WithoutCancel(ctx), id, rtName, rsb, m.cfg.ReapRetry)
	}
	return err
}

// reapOnce is one attempt of reap.
func (m *Manager) reapOnce(ctx context.Context, id, rtName string, rsb runtime.Sandbox) error {
	errs := []error{m.releaseHost(ctx, id, rtName, rsb)}
	if m.cfg.ImagesDir != "" {
		errs = append(errs, removeImage(m.pausedDir(id)))
	}
	if err := errors.Join(errs...); err != nil {
		m.log.Error("reap sandbox", "sandbox", id, "err", err)
		if rec, gerr := m.store.Get(ctx, id); gerr == nil {
			rec.State = store.StateReaping
			_ = m.store.Put(ctx, rec)
		}
		return fmt.Errorf("release sandbox %s: %w", id, err)
	}
	mine, err := m.store.Remove(ctx, id)
	if err == nil && mine && m.cfg.SharedDir != "" {
		// Only once the record was this node's: a paused image on shared
		// storage may be another node's by now (AdoptMoved). Left over on
		// a failure, it is reaped as an orphan (reapShared).
		if rerr := removeImage(m.sharedPausedDir(id)); rerr != nil {
			m.log.Warn("remove shared paused image", "sandbox", id, "err", rerr)
		}
	}
	return err
}
