package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// Admission: cold starts (and resumes, forks) take create slots: MaxCreating
// of them exist, and a start on a runtime takes as many as createCost says
// (a runsc start costs about four times a crun start in CPU, on a node where
// the start is CPU-bound: more in parallel only slows every one of them and
// a burst thrashes instead of queueing). Up to MaxQueued more wait, first
// come first served within a team and round robin across teams (fair.go),
// for at most AdmitWait or until their request is cancelled; beyond that a start fails at once with ErrBusy (429 with
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

// admit takes the create slots of a start of team on runtime rt, waiting
// in the queue if too few are free. The caller must call release(rt) once
// the start has finished.
func (m *Manager) admit(ctx context.Context, rt, team string) error {
	w := m.costOf(rt)
	if err := m.enqueue(w, team); err != nil {
		m.observer().Refused("full")
		return err
	}
	if m.slots == nil {
		m.dequeue(true, w)
		return nil
	}
	wt := m.takeOrQueue(team, w)
	if wt == nil {
		m.dequeue(true, w)
		return nil
	}
	wait := m.cfg.AdmitWait
	if wait <= 0 {
		wait = defaultAdmitWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case <-wt.ch:
		if wt.evicted {
			m.dequeue(false, 0)
			m.observer().Refused("full")
			return fmt.Errorf("%w: the create queue is full and this team holds most of it", ErrBusy)
		}
		m.dequeue(true, w)
		return nil
	case <-ctx.Done():
		err = fmt.Errorf("%w: waiting for a create slot: %w", ErrBusy, ctx.Err())
	case <-t.C:
		m.observer().Refused("wait")
		err = fmt.Errorf("%w: no create slot within %s (%d slots)", ErrBusy, wait, m.cfg.MaxCreating)
	}
	if m.abandon(wt) { // granted as it gave up: pass the slots on
		m.dequeue(true, w)
		m.release(rt)
		return err
	}
	m.dequeue(false, 0)
	return err
}

// enqueue counts a start of team of cost w as waiting, or refuses it. When
// the queue is full, a team holding fewer waiters than the largest holder
// takes the place of that team's newest waiter (evictLocked), so a team
// flooding creates never keeps another's from queueing; alone, a team may
// fill the whole queue.
func (m *Manager) enqueue(w int64, team string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed:
		return fmt.Errorf("%w: shutting down", ErrUnavailable)
	case m.cfg.MaxSandboxes > 0 && m.activeLocked()+m.creating+m.waiting >= m.cfg.MaxSandboxes:
		return fmt.Errorf("%w: node is at its limit of %d sandboxes", ErrBusy, m.cfg.MaxSandboxes)
	case m.slots != nil && m.slotsUsed+w > int64(m.cfg.MaxCreating) && m.waiting >= m.cfg.MaxQueued && !m.evictLocked(team):
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
		m.handoff()
	}
}

// activeLocked counts the sandboxes holding host resources (not paused).
// m.mu must be held.
func (m *Manager) activeLocked() int {
	n := 0
	for _, sb := range m.sandboxes {
		if sb.rec.State != store.StatePaused {
			n++
		}
	}
	return n
}
