package sandbox

import (
	"context"
	"fmt"
	"time"
)

// Admission: at most MaxCreating creates run at once (the runtime start is
// CPU-bound; more in parallel only slows every one of them). Up to MaxQueued
// more wait, first come first served, for at most AdmitWait or until their
// request is cancelled; beyond that a create fails at once with ErrBusy (429
// with Retry-After). MaxSandboxes counts running, creating and queued.

// defaultAdmitWait bounds a queued create's wait when AdmitWait is unset.
const defaultAdmitWait = 30 * time.Second

// admit takes a create slot, waiting in the queue if all are taken. The
// caller must call release once the create has finished.
func (m *Manager) admit(ctx context.Context) error {
	if err := m.enqueue(); err != nil {
		return err
	}
	if m.slots == nil {
		m.dequeue(true)
		return nil
	}
	wait := m.cfg.AdmitWait
	if wait <= 0 {
		wait = defaultAdmitWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case m.slots <- struct{}{}:
		m.dequeue(true)
		return nil
	case <-ctx.Done():
		m.dequeue(false)
		return fmt.Errorf("%w: waiting for a create slot: %w", ErrBusy, ctx.Err())
	case <-t.C:
		m.dequeue(false)
		return fmt.Errorf("%w: no create slot within %s (%d in flight)", ErrBusy, wait, m.cfg.MaxCreating)
	}
}

// enqueue counts a create as waiting, or refuses it.
func (m *Manager) enqueue() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed:
		return fmt.Errorf("%w: shutting down", ErrUnavailable)
	case m.cfg.MaxSandboxes > 0 && m.activeLocked()+m.creating+m.waiting >= m.cfg.MaxSandboxes:
		return fmt.Errorf("%w: node is at its limit of %d sandboxes", ErrBusy, m.cfg.MaxSandboxes)
	case m.slots != nil && len(m.slots) >= cap(m.slots) && m.waiting >= m.cfg.MaxQueued:
		return fmt.Errorf("%w: %d sandboxes are being created and %d are queued", ErrBusy, m.creating, m.waiting)
	}
	m.waiting++
	return nil
}

// dequeue moves a waiting create to in flight (got) or drops it.
func (m *Manager) dequeue(got bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waiting--
	if got {
		m.creating++
	}
}

// release frees the slot taken by admit.
func (m *Manager) release() {
	m.mu.Lock()
	m.creating--
	m.mu.Unlock()
	if m.slots != nil {
		<-m.slots
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
