package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// Paused sandboxes on shared storage (Config.SharedDir) move between the
// nodes of a cluster. A node that is asked about a sandbox it does not
// hold takes it over (AdoptMoved) if the store lets it: paused on this
// node's storage, the caller's team's, its node holding no live lease.
// Resuming one first moves its record from paused to resuming
// (beginResume) — refused once another node took it — so at most one node
// ever restores a given pause, and a node that lost its lease cannot.

// AdoptMoved takes over sandbox id of team from a node that is gone, when
// its paused image is on this node's shared storage; afterwards it is this
// node's paused sandbox, as if paused here. Anything else (no shared
// storage, another team's, not paused, its node live) is ErrNotFound.
func (m *Manager) AdoptMoved(ctx context.Context, team, id string) error {
	return m.adoptMoved(ctx, id, func(r *store.Sandbox) bool { return r.Team == team })
}

// AdoptMovedTraffic is AdoptMoved for sandbox traffic, which names no
// team: any paused sandbox moves (moving a paused record reveals and
// changes nothing of it), and the traffic is then authorised, paused
// answered or auto-resumed exactly as if the sandbox had been paused here.
func (m *Manager) AdoptMovedTraffic(ctx context.Context, id string) error {
	return m.adoptMoved(ctx, id, func(*store.Sandbox) bool { return true })
}

func (m *Manager) adoptMoved(ctx context.Context, id string, may func(*store.Sandbox) bool) error {
	if m.cfg.SharedDir == "" || !ValidID(id) {
		return fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	rec, err := m.store.ClaimPaused(ctx, id, may)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrOwnerLive) {
		return fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	m.mu.Lock()
	_, had := m.sandboxes[id]
	if !had {
		sb := &Sandbox{rec: *rec}
		sb.tmpl, _ = m.templateOf(rec) // defaults for a files-only resume's re-init
		m.sandboxes[id] = sb
	}
	m.mu.Unlock()
	if !had {
		m.log.Info("took over a paused sandbox from shared storage", "sandbox", id)
		m.eventCtx(ctx, id, "adopted", "from", "shared storage")
	}
	return nil
}

// RunAdoptions takes over, every period until ctx ends, the paused
// sandboxes on this node's shared storage whose node is gone (dead or
// stopped), so they are listed and served again without waiting for a
// request about them to find them. Nodes racing for one get one winner
// (ClaimPaused); a loser's attempt is a no-op.
func (m *Manager) RunAdoptions(ctx context.Context, period time.Duration) {
	if m.cfg.SharedDir == "" {
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := m.store.MovableIDs(ctx, maxAdoptions)
		if err != nil && ctx.Err() == nil {
			m.log.Warn("list paused sandboxes of gone nodes", "err", err)
		}
		for _, id := range ids {
			_ = m.AdoptMovedTraffic(ctx, id)
		}
	}
}

// maxAdoptions bounds one RunAdoptions round.
const maxAdoptions = 100

// beginResume moves sb's record (rec, paused on shared storage) to
// resuming before anything is restored: refused if the record is no longer
// this node's paused one (another node took it over: sb is forgotten here,
// and the answer is ErrNotFound) or this node's lease is lost. A paused
// image on this node's disk needs no such step.
func (m *Manager) beginResume(ctx context.Context, sb *Sandbox, rec store.Sandbox) error {
	if rec.Persist.Storage == "" {
		return nil
	}
	rec.State = store.StateResuming
	err := m.store.Transition(ctx, &rec, store.StatePaused)
	if errors.Is(err, store.ErrChanged) {
		m.forget(sb)
		return fmt.Errorf("%w: sandbox %s was taken over by another node", ErrNotFound, rec.ID)
	}
	if err != nil {
		return fmt.Errorf("%w: resume sandbox %s: %w", ErrUnavailable, rec.ID, err)
	}
	return nil
}

// abortResume puts back the paused record (paused) after a resume that
// began (beginResume) failed; the image is still there.
func (m *Manager) abortResume(ctx context.Context, paused store.Sandbox) {
	if paused.Persist.Storage == "" {
		return
	}
	if err := m.store.Transition(context.WithoutCancel(ctx), &paused, store.StateResuming); err != nil {
		m.log.Error("record failed resume as paused again", "sandbox", paused.ID, "err", err)
	}
}

// forget drops sb from this node without touching its record or image:
// they are another node's now.
func (m *Manager) forget(sb *Sandbox) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sandboxes[sb.rec.ID] == sb {
		delete(m.sandboxes, sb.rec.ID)
		m.stopLocked(sb)
	}
	m.log.Warn("paused sandbox was taken over by another node; forgotten here", "sandbox", sb.rec.ID)
}

// settlePause is for a pause onto shared storage whose record write failed
// with werr: a write the store refused (fenced, another node's) was not
// made, but one whose answer was lost may have been, and a sandbox whose
// record says paused must not run on (another node may resume its image).
// It reads the record back: paused → rec and nil (the pause happened);
// anything else → werr, to thaw as usual. settled is false when it cannot
// tell: the caller must neither thaw the sandbox nor remove its image.
func (m *Manager) settlePause(ctx context.Context, id string, werr error) (rec store.Sandbox, settled bool, err error) {
	if errors.Is(werr, store.ErrFenced) || errors.Is(werr, store.ErrExists) || errors.Is(werr, store.ErrBadState) {
		return rec, true, werr
	}
	cur, gerr := m.store.Get(context.WithoutCancel(ctx), id)
	switch {
	case gerr == nil && cur.State == store.StatePaused:
		m.log.Warn("paused record was written after all", "sandbox", id, "err", werr)
		return *cur, true, nil
	case gerr == nil || errors.Is(gerr, store.ErrNotFound):
		return rec, true, werr
	}
	m.log.Error("pause: cannot tell whether the paused record was written; sandbox left frozen", "sandbox", id, "err", werr, "read", gerr)
	return rec, false, fmt.Errorf("%w: %w", ErrUnavailable, werr)
}
