package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sbx-dev/sbx/internal/failpoint"
	"github.com/sbx-dev/sbx/internal/store"
)

// Pause saves a running sandbox to disk and releases its processes, cgroups,
// writable layer, network and address; the record stays, in state
// "paused", until Resume or Kill. With memory (runsc only) every process
// continues where it was on resume; without, only the files are kept and
// resume starts the sandbox afresh (same id, token and env). It fails with
// ErrConflict if the sandbox is already paused, ErrNotImpl if its runtime
// cannot checkpoint memory, ErrQuota past the image quota, the DiskAdmit's
// error past its team's disk quota.
func (m *Manager) Pause(ctx context.Context, id string, memory bool) error {
	sb, unlock, err := m.lockOp(id)
	if err != nil {
		return err
	}
	defer unlock()
	return m.pauseLocked(ctx, sb, memory, "api")
}

// pauseLocked is Pause for a caller holding sb.op.
func (m *Manager) pauseLocked(ctx context.Context, sb *Sandbox, memory bool, reason string) (err error) {
	id, rt0, t0 := sb.rec.ID, sb.rec.Runtime, time.Now()
	defer func() { m.observer().Lifecycle("pause", rt0, time.Since(t0), err) }()
	if err := errors.Join(m.pausable(sb, memory), m.checkQuota(0)); err != nil {
		return err
	}
	release, err := m.admitPause(ctx, sb, memory)
	if err != nil {
		return err
	}
	// Released once the paused record is in place: it counts from then on.
	defer release()
	m.drainEvents(ctx, sb) // a files-only pause restarts the agent: read what it logged
	m.setState(sb, store.StatePausing)
	storage := m.imageStorage(&sb.rec)
	dir := m.pausedDirOf(&store.Sandbox{ID: id, Persist: store.Persistence{Storage: storage}})
	_ = removeImage(dir)
	size, err := m.capture(ctx, sb, dir, memory)
	if err == nil {
		err = m.checkQuota(size)
	}
	var rec store.Sandbox
	if err == nil {
		err = failpoint.Hit("pause/before-record")
	}
	if err == nil {
		rec, err = m.recordPaused(ctx, sb, size, memory, storage)
		if err != nil && storage != "" {
			var settled bool
			if rec, settled, err = m.settlePause(ctx, id, err); !settled {
				m.setState(sb, store.StateRunning) // frozen, image kept: the next Recover settles it
				return err
			}
		}
	}
	if err != nil {
		_ = removeImage(dir)
		m.setState(sb, store.StateRunning)
		m.thaw(context.WithoutCancel(ctx), sb)
		return err
	}
	m.mu.Lock()
	rt := sb.rt
	sb.rec, sb.rt, sb.info, sb.pauseTries = rec, nil, NetInfo{}, 0
	m.stopLocked(sb)
	m.mu.Unlock()
	_ = failpoint.Hit("pause/before-release")
	if err := m.releaseHost(context.WithoutCancel(ctx), id, rt0, rt); err != nil {
		// The next Recover releases what is left (adoptPaused).
		m.log.Error("release paused sandbox's host resources", "sandbox", id, "err", err)
	}
	m.log.Info("sandbox paused", "sandbox", id, "reason", reason, "memory", memory, "bytes", size, "took", time.Since(t0))
	m.eventCtx(ctx, id, "paused", "reason", reason, "memory", strconv.FormatBool(memory), "bytes", strconv.FormatInt(size, 10))
	return nil
}

// pausable checks that sb can be paused now.
func (m *Manager) pausable(sb *Sandbox, memory bool) error {
	if sb.rec.State != store.StateRunning {
		return fmt.Errorf("%w: sandbox %s is already %s", ErrConflict, sb.rec.ID, sb.rec.State)
	}
	if memory {
		if err := m.canCheckpoint(sb); err != nil {
			return err
		}
	} else if m.cfg.ImagesDir == "" {
		return fmt.Errorf("%w: this node has no image directory for pause", ErrNotImpl)
	}
	return nil
}

// recordPaused writes sb's record as paused (the image at size bytes, on
// storage: "" this node's disk).
func (m *Manager) recordPaused(ctx context.Context, sb *Sandbox, size int64, memory bool, storage string) (store.Sandbox, error) {
	m.mu.Lock()
	rec := sb.rec
	m.mu.Unlock()
	rec.State, rec.SandboxIP = store.StatePaused, ""
	rec.Persist.PausedAt, rec.Persist.ImageBytes, rec.Persist.SavedMemory = time.Now().UTC(), size, memory
	rec.Persist.Storage, rec.Persist.PauseDeferredSince = storage, time.Time{}
	if err := m.store.Put(ctx, &rec); err != nil {
		return rec, fmt.Errorf("record paused sandbox %s: %w", rec.ID, err)
	}
	return rec, nil
}

// setState changes sb's in-memory state (StatePausing is never stored).
func (m *Manager) setState(sb *Sandbox, state store.State) {
	m.mu.Lock()
	sb.rec.State = state
	m.mu.Unlock()
}
