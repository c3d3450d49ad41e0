package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Admission: cold starts (and resumes, forks) take create slots: MaxCreating
// of them exist, and a start on a runtime takes as many as createCost says
// (a runsc start costs about four times a crun start in CPU, on a node where
// the start is CPU-bound: more in parallel only slows every one of them and
// a burst thrashes instead of queueing). Up to MaxQueued more wait, first
// come first served, for at most AdmitWait or until their request is
// cancelled; beyond that a start fails at once with ErrBusy (429 with
// Retry-After). MaxSandboxes counts running, creating and queued. A create
// served from a warm pool takes no slot (see Manager.create): it costs no
// runtime start and never waits behind cold ones.

// defaultAdmitWait bounds a queued create's wait when AdmitWait is unset.
const defaultAdmitWait = 30 * time.Second

// createCost is how many create slots one start on a runtime takes (1 when
// absent). runsc: its start costs ≈ 130 ms of CPU against crun's ≈ 30 ms
// (docs/BENCHMARKS.md), so with the default 8 slots 4 run at once.
var createCost = map[string]int64{"runsc": 2}

// costOf is rt's create cost, at most the number of slots.
func (m *Manager) costOf(rt string) int64 {
	w := max(createCost[rt], 1)
	if m.cfg.MaxCreating > 0 {
		w = min(w, int64(m.cfg.MaxCreating))
	}
	return w
}

// admit takes the create slots of a start on runtime rt, waiting in the
// queue if too few are free. The caller must call release(rt) once the
// start has finished.
func (m *Manager) admit(ctx context.Context, rt string) error {
	w := m.costOf(rt)
	if err := m.enqueue(w); err != nil {
		m.observer().Refused("full")
		return err
	}
	if m.slots == nil {
		m.dequeue(true, w)
		return nil
	}
	wait := m.cfg.AdmitWait
	if wait <= 0 {
		wait = defaultAdmitWait
	}
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := m.slots.Acquire(actx, w); err != nil {
		m.dequeue(false, 0)
		if ctx.Err() != nil {
			return fmt.Errorf("%w: waiting for a create slot: %w", ErrBusy, ctx.Err())
		}
		if errors.Is(err, context.DeadlineExceeded) {
			m.observer().Refused("wait")
			return fmt.Errorf("%w: no create slot within %s (%d slots)", ErrBusy, wait, m.cfg.MaxCreating)
		}
		return fmt.Errorf("%w: waiting for a create slot: %w", ErrBusy, err)
	}
	m.dequeue(true, w)
	return nil
}

// enqueue counts a start of cost w as waiting, or refuses it.
func (m *Manager) enqueue(w int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed:
		return fmt.Errorf("%w: shutting down", ErrUnavailable)
	case m.cfg.MaxSandboxes > 0 && m.activeLocked()+m.creating+m.waiting >= m.cfg.MaxSandboxes:
		return fmt.Errorf("%w: node is at its limit of %d sandboxes", ErrBusy, m.cfg.MaxSandboxes)
	case m.slots != nil && m.slotsUsed+w > int64(m.cfg.MaxCreating) && m.waiting >= m.cfg.MaxQueued:
		return fmt.Errorf("%w: %d sandboxes are being created and %d are queued", ErrBusy, m.creating, m.waiting)
	}
	m.waiting++
	return nil
}

// dequeue moves a waiting start to in flight holding w slots (got) or
// drops it.
func (m *Manager) dequeue(got bool, w int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waiting--
	if got {
		m.creating++
		m.slotsUsed += w
	}
}

// release frees the slots taken by admit(rt).
func (m *Manager) release(rt string) {
	w := m.costOf(rt)
	m.mu.Lock()
	m.creating--
	m.slotsUsed -= w
	m.mu.Unlock()
	if m.slots != nil {
		m.slots.Release(w)
	}
}

// activeLocked counts the sandboxes holding host resources (not paused).
// m.mu must be held.
func (m *Manager) activeLocked() int {
	n := 0
	for _, sb := range m.sandboxes {
		if sb.rec.State != "paused" {
			n++
		}
	}
	return n
}
