package sandbox

import (
	"context"
	"errors"
	"time"
)

// A pool's template may be rebuilt (or deleted and made again, a new id)
// while the pool is full: its sandboxes then run a build no create of the
// template's latest asks for, so they are never claimed and, the pool being
// full, never replaced. A claim that meets one marks the pool stale; RunPools
// then reaps the sandboxes that are not of the template's current build and
// the pool refills with it. Every staleEvery RunPools also checks every
// pool holding sandboxes, so a rebuild is noticed without a create paying a
// cold start for it, and a deleted template's pool is emptied.

// A refill resolves its template when it starts; one that lands after a
// rebuild (or a delete) of it would hold a sandbox of the old build until
// the next check, and a create in between would pay a cold start. So a
// refill checks its template again when its sandbox is ready (stillCurrent)
// and reaps it instead of offering it when the template changed.

// errOutdated is a refill whose template was rebuilt or deleted while its
// sandbox started: the sandbox is reaped and the pool refilled at once,
// with no backoff (the refill did not fail).
var errOutdated = errors.New("warm pool refill: its template was rebuilt or deleted meanwhile")

// stillCurrent reports errOutdated when tmpl, which pool k's refill
// started, is no longer the current build of k's template (Templates.Get);
// other lookup errors keep the sandbox, as evictStale does.
func (m *Manager) stillCurrent(k PoolKey, tmpl Template) error {
	cur, err := m.templates.Get(k.Template)
	switch {
	case errors.Is(err, ErrNotFound):
		return errOutdated
	case err != nil:
		return nil
	case cur.Name != tmpl.Name || cur.Build != tmpl.Build:
		return errOutdated
	}
	return nil
}

// staleEvery is how often every pool is checked against its template.
const staleEvery = 2 * time.Second

// markStale marks every pool that holds ready sandboxes for a check.
func (m *Manager) markStale() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.pools {
		if len(p.ready) > 0 {
			p.stale = true
		}
	}
}

// takeStale returns the pools marked stale and clears their marks.
func (m *Manager) takeStale() []PoolKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PoolKey
	for k, p := range m.pools {
		if p.stale {
			p.stale = false
			out = append(out, k)
		}
	}
	return out
}

// evictStale reaps pool k's ready sandboxes that do not run the current
// build of k's template (Templates.Get), all of them when it names no
// template any more (deleted); other errors keep them. It wakes the
// refiller after.
func (m *Manager) evictStale(ctx context.Context, k PoolKey) {
	tmpl, err := m.templates.Get(k.Template)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return
	}
	m.mu.Lock()
	p := m.pools[k]
	var stale []*Sandbox
	live := p.ready[:0]
	for _, sb := range p.ready {
		if sb.rec.TemplateID == tmpl.Name && sb.rec.Build == tmpl.Build {
			live = append(live, sb)
		} else {
			stale = append(stale, sb)
		}
	}
	clear(p.ready[len(live):])
	p.ready = live
	m.mu.Unlock()
	for _, sb := range stale {
		m.log.Info("warm pool: reaping a sandbox of an older build of its template, or of a deleted one", "template", k.Template, "sandbox", sb.rec.ID)
		sb.closeAgent()
		_ = m.reap(context.WithoutCancel(ctx), sb.rec.ID, sb.rec.Runtime, sb.rt)
	}
	if len(stale) > 0 {
		m.kickRefill()
	}
}
