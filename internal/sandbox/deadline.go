package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// armLocked (re)schedules sb's deadline at its record's EndAt, as the
// wall clock reads now. m.mu must be held.
func (m *Manager) armLocked(sb *Sandbox) {
	m.armAtLocked(sb, time.Now().Add(time.Until(sb.rec.EndAt)))
}

// armAtLocked (re)schedules sb's deadline at due, which must carry a
// monotonic clock reading (time.Now().Add: never a record's EndAt): the
// deadline is then a span of elapsed time, which a step of the wall clock
// (NTP, a VM resumed and its clock reset) neither shortens nor lengthens.
// A sandbox told SetTimeout(d) lives d, whatever the wall clock does
// meanwhile; EndAt is what the wall clock said then. m.mu must be held.
func (m *Manager) armAtLocked(sb *Sandbox, due time.Time) {
	if sb.timer != nil {
		sb.timer.Stop()
	}
	id := sb.rec.ID
	sb.due = due
	sb.timer = time.AfterFunc(time.Until(due), func() { m.expire(id) })
}

// expire ends a sandbox whose deadline passed (unless it was extended or
// paused meanwhile): it is paused if it asked for that (lifecycle.onTimeout
// "pause"), killed otherwise. A pause refused for want of disk is retried
// (deferPause) rather than the sandbox killed, for at most PauseRetryFor.
func (m *Manager) expire(id string) { m.expireSandbox(id, false) }

// expireSandbox is expire; nudged (disk was freed: DiskFreed) makes a
// sandbox whose deadline's pause was deferred due at once.
func (m *Manager) expireSandbox(id string, nudged bool) {
	sb, unlock, err := m.lockOp(id)
	if err != nil {
		return
	}
	defer unlock()
	m.mu.Lock()
	deferred := !sb.rec.Persist.PauseDeferredSince.IsZero()
	due := sb.rec.State == store.StateRunning && (!time.Now().Before(sb.due) || nudged && deferred) && !m.closed
	autoPause := sb.rec.AutoPause
	m.mu.Unlock()
	if !due {
		return
	}
	ctx := context.Background()
	reason := "timeout"
	if autoPause {
		m.log.Info("sandbox timed out; pausing it", "sandbox", id, "retry", deferred)
		err := m.pauseLocked(ctx, sb, !sb.rec.Persist.NoMemory, "timeout")
		if err == nil || m.deferPause(ctx, sb, err) {
			return
		}
		if diskCause(err) != "" {
			reason = "pause-refused"
		}
		m.log.Error("auto-pause failed; killing the sandbox", "sandbox", id, "err", err)
	} else {
		m.log.Info("sandbox timed out", "sandbox", id)
	}
	_ = m.killLocked(ctx, sb, reason, nil)
}

// SetTimeout replaces the deadline with now+d. A d of 0 ends the sandbox's
// time now, as E2B's setTimeout(0) does: it times out at once (killed, or
// paused if it asked for that), after this call returns.
func (m *Manager) SetTimeout(ctx context.Context, id string, d time.Duration) error {
	return m.moveEnd(ctx, id, d, false)
}

// Extend moves the deadline to now+d only if that is later (E2B connect).
func (m *Manager) Extend(ctx context.Context, id string, d time.Duration) error {
	return m.moveEnd(ctx, id, d, true)
}

func (m *Manager) moveEnd(ctx context.Context, id string, d time.Duration, onlyLater bool) error {
	if d != 0 || onlyLater {
		if err := m.checkTimeout(d); err != nil {
			return err
		}
	}
	sb, unlock, err := m.lockOp(id)
	if err != nil {
		return err
	}
	defer unlock()
	return m.setEndLocked(ctx, sb, time.Now().Add(d), onlyLater)
}

func (m *Manager) checkTimeout(d time.Duration) error {
	if d <= 0 || d > m.cfg.MaxTimeout {
		return fmt.Errorf("%w: timeout must be between 1 and %d seconds", ErrInvalid, int(m.cfg.MaxTimeout/time.Second))
	}
	return nil
}

// setEndLocked moves a running sandbox's deadline to end, a time.Now().Add
// (its monotonic reading is the deadline; see armAtLocked), ErrNotFound if
// it is paused, ErrConflict if it is changing state; the caller holds sb.op
// (so no other lifecycle operation changes sb.rec meanwhile). The record is
// written with Manager.mu released: Get and List, so every proxied request,
// never wait for the database.
func (m *Manager) setEndLocked(ctx context.Context, sb *Sandbox, end time.Time, onlyLater bool) error {
	m.mu.Lock()
	rec, state := sb.rec, sb.rec.State
	m.mu.Unlock()
	switch state {
	case store.StateRunning:
	case store.StatePaused:
		// As on E2B, whose timeout route finds only live sandboxes: a
		// paused one is 404 (the SDK's SandboxNotFoundError); connect
		// resumes it.
		return fmt.Errorf("%w: sandbox %s is paused (connect resumes it)", ErrNotFound, rec.ID)
	default: // mid-transition (pausing, resuming): E2B's 409
		return fmt.Errorf("%w: sandbox %s is %s", ErrConflict, rec.ID, state)
	}
	if onlyLater && !end.After(rec.EndAt) {
		return nil
	}
	// A deadline the caller sets ends a deferred pause's retries (the
	// next deadline starts its own).
	rec.EndAt, rec.Persist.PauseDeferredSince = end.UTC(), time.Time{}
	if err := m.store.Put(ctx, &rec); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sb.rec.EndAt, sb.rec.Persist.PauseDeferredSince, sb.pauseTries = rec.EndAt, time.Time{}, 0
	m.armAtLocked(sb, end)
	return nil
}
