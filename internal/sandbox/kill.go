package sandbox

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/sbx-dev/sbx/internal/failpoint"
	"github.com/sbx-dev/sbx/internal/runtime"
)

// Kill stops a sandbox and releases every host resource it held. The sandbox
// disappears from Get/List at once, so concurrent requests see 404.
func (m *Manager) Kill(ctx context.Context, id string) error {
	return m.kill(ctx, id, "api")
}

// kill removes id with a reason recorded in the audit log.
func (m *Manager) kill(ctx context.Context, id, reason string) error {
	m.mu.Lock()
	sb, ok := m.sandboxes[id]
	if ok {
		delete(m.sandboxes, id)
		m.buryLocked(id)
		if sb.done != nil {
			close(sb.done)
		}
		if sb.timer != nil {
			sb.timer.Stop()
		}
	}
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	m.log.Info("killing sandbox", "sandbox", id, "reason", reason)
	m.event(id, "killed", "reason", reason)
	return m.reap(context.WithoutCancel(ctx), id, sb.rec.Runtime)
}

// reap releases everything that may exist for id, in reverse order of
// creation, and deletes the record only when every step succeeded; otherwise
// the record stays (state "reaping") and the next Recover retries.
func (m *Manager) reap(ctx context.Context, id, rtName string) error {
	var errs []error
	if rt, ok := m.runtimes[rtName]; ok {
		errs = append(errs, m.deleteRuntime(ctx, rt, id))
	}
	errs = append(errs, failpoint.Hit("delete/before-layer"), m.layers.Remove(id))
	errs = append(errs, failpoint.Hit("delete/before-network"), m.network.Teardown(ctx, id))
	if err := errors.Join(errs...); err != nil {
		m.log.Error("reap sandbox", "sandbox", id, "err", err)
		if rec, gerr := m.store.Get(ctx, id); gerr == nil {
			rec.State = "reaping"
			_ = m.store.Put(ctx, rec)
		}
		return fmt.Errorf("release sandbox %s: %w", id, err)
	}
	return m.store.Delete(ctx, id)
}

func (m *Manager) deleteRuntime(ctx context.Context, rt runtime.Runtime, id string) error {
	rsb, err := rt.Load(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_ = rsb.Kill(ctx, syscall.SIGKILL)
	return rsb.Delete(ctx)
}
