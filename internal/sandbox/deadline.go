package sandbox

import (
	"context"
	"fmt"
	"time"
)

// armLocked (re)schedules sb's deadline. m.mu must be held.
func (m *Manager) armLocked(sb *Sandbox) {
	if sb.timer != nil {
		sb.timer.Stop()
	}
	id := sb.rec.ID
	sb.timer = time.AfterFunc(time.Until(sb.rec.EndAt), func() { m.expire(id) })
}

// expire kills a sandbox whose deadline passed (unless it was extended).
func (m *Manager) expire(id string) {
	m.mu.Lock()
	sb, ok := m.sandboxes[id]
	due := ok && !time.Now().Before(sb.rec.EndAt)
	closed := m.closed
	m.mu.Unlock()
	if !due || closed {
		return
	}
	m.log.Info("sandbox timed out", "sandbox", id)
	_ = m.kill(context.Background(), id, "timeout")
}

// SetTimeout replaces the deadline with now+d.
func (m *Manager) SetTimeout(ctx context.Context, id string, d time.Duration) error {
	if err := m.checkTimeout(d); err != nil {
		return err
	}
	return m.setEnd(ctx, id, time.Now().UTC().Add(d), false)
}

// Extend moves the deadline to now+d only if that is later (E2B connect).
func (m *Manager) Extend(ctx context.Context, id string, d time.Duration) error {
	if err := m.checkTimeout(d); err != nil {
		return err
	}
	return m.setEnd(ctx, id, time.Now().UTC().Add(d), true)
}

func (m *Manager) checkTimeout(d time.Duration) error {
	if d <= 0 || d > m.cfg.MaxTimeout {
		return fmt.Errorf("%w: timeout must be between 1 and %d seconds", ErrInvalid, int(m.cfg.MaxTimeout/time.Second))
	}
	return nil
}

func (m *Manager) setEnd(ctx context.Context, id string, end time.Time, onlyLater bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, ok := m.sandboxes[id]
	if !ok {
		return fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	if onlyLater && !end.After(sb.rec.EndAt) {
		return nil
	}
	rec := sb.rec
	rec.EndAt = end
	if err := m.store.Put(ctx, &rec); err != nil {
		return err
	}
	sb.rec = rec
	m.armLocked(sb)
	return nil
}
