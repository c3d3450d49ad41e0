package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// Kill stops a sandbox (running or paused) and releases every host
// resource and image it held. The sandbox disappears from Get/List at once,
// so concurrent requests see 404.
func (m *Manager) Kill(ctx context.Context, id string) error {
	return m.kill(ctx, id, "api", nil)
}

// kill removes id with a reason recorded in the audit log. It waits for a
// lifecycle operation in progress (pause, resume, fork) to finish; if cond
// is set it is checked again then, under m.mu, and the kill happens only if
// it still holds.
func (m *Manager) kill(ctx context.Context, id, reason string, cond func(*Sandbox) bool) error {
	sb, unlock, err := m.lockOp(id)
	if err != nil {
		return err
	}
	defer unlock()
	return m.killLocked(ctx, sb, reason, cond)
}

// killLocked is kill for a caller holding sb.op.
func (m *Manager) killLocked(ctx context.Context, sb *Sandbox, reason string, cond func(*Sandbox) bool) error {
	id := sb.rec.ID
	m.mu.Lock()
	ok := m.sandboxes[id] == sb && (cond == nil || cond(sb))
	paused := sb.rec.State == store.StatePaused
	if ok {
		delete(m.sandboxes, id)
		m.stopLocked(sb)
	}
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	m.log.Info("killing sandbox", "sandbox", id, "reason", reason)
	m.drainEvents(ctx, sb)
	m.eventCtx(ctx, id, "killed", "reason", reason)
	err := m.reap(context.WithoutCancel(ctx), id, sb.rec.Runtime, sb.rt)
	if paused {
		m.DiskFreed() // its image is gone
	}
	return err
}

// stopLocked ends sb's streams and disarms its deadline. m.mu must be held.
func (m *Manager) stopLocked(sb *Sandbox) {
	if sb.done != nil {
		close(sb.done)
		sb.done = nil
	}
	if sb.timer != nil {
		sb.timer.Stop()
	}
}

// lockOp finds id and takes its operation lock; unlock releases it. It
// fails with ErrNotFound if id is unknown or was removed while waiting.
func (m *Manager) lockOp(id string) (*Sandbox, func(), error) {
	m.mu.Lock()
	sb, ok := m.sandboxes[id]
	m.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	sb.op.Lock()
	m.mu.Lock()
	still := m.sandboxes[id] == sb
	m.mu.Unlock()
	if !still {
		sb.op.Unlock()
		return nil, nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	return sb, sb.op.Unlock, nil
}

// SaveFiles copies what sandbox id wrote (its writable layer's upper
// directory: files, deletions as whiteouts, renames) to dst, which must not
// exist. Template builds turn a step's sandbox into a layer with it. The
// sandbox is frozen for the copy (see freeze: a process a step left
// running must not change the tree under it) and thawed after.
func (m *Manager) SaveFiles(ctx context.Context, id, dst string) error {
	sb, unlock, err := m.lockOp(id)
	if err != nil {
		return err
	}
	defer unlock()
	if err := m.freeze(ctx, sb); err != nil {
		return err
	}
	defer m.thaw(context.WithoutCancel(ctx), sb)
	return m.layers.SaveUpper(ctx, id, dst)
}

// drainTimeout bounds reading a dying sandbox's last agent events.
const drainTimeout = time.Second

// drainEvents lets an EventDrainer sink read what sb's agent logged since
// its last poll (the end of the last commands), before sb is stopped.
func (m *Manager) drainEvents(ctx context.Context, sb *Sandbox) {
	d, ok := m.cfg.Events.(EventDrainer)
	// A dead agent has nothing to say: on runsc its read would wait out
	// drainTimeout (nothing answers for a Sentry that is gone).
	if !ok || sb.rt == nil || !sb.info.SandboxIP.IsValid() || initDead(sb) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
	defer cancel()
	d.Drain(ctx, sb.rec.ID, fmt.Sprintf("http://%s:%d", sb.info.SandboxIP, m.cfg.AgentPort), sb.rec.EnvdToken)
}
