package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// How the watchdog finds sandboxes that died on their own (init exited:
// the agent ended, a gVisor Sentry or its gofer was killed, the host OOM
// killer took the container): each running or pooled sandbox's init is
// watched through a pidfd (runtime.NotifyExit), whose end wakes the
// watchdog at once; a sweep over /proc every sweepEvery is the safety net,
// every watchEvery once a pidfd could not be armed (kernel without
// pidfd_open, descriptors exhausted).
const (
	sweepEvery = 30 * time.Second
	watchEvery = 2 * time.Second
)

// RunWatchdog reaps sandboxes whose init process is gone, until ctx ends.
// At idle it costs a parked goroutine and a descriptor per sandbox and one
// wakeup per sweepEvery: no polling per sandbox.
func (m *Manager) RunWatchdog(ctx context.Context) {
	t := time.NewTimer(m.sweepInterval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.exited.all() // the sweep looks at every init
		case <-m.deathKick:
		}
		m.reapDead(ctx, m.exited.take())
		t.Reset(m.sweepInterval())
	}
}

// sweepInterval is sweepEvery while every init is watched by a pidfd,
// watchEvery once one could not be.
func (m *Manager) sweepInterval() time.Duration {
	if m.unwatched.Load() {
		return watchEvery
	}
	return sweepEvery
}

// reapDead reaps every running or pooled sandbox whose init died, of those
// whose init pid is in pids (nil: all of them).
func (m *Manager) reapDead(ctx context.Context, pids map[int]bool) {
	running, pooled := m.dead(pids)
	for _, d := range running {
		m.log.Warn("sandbox init exited; reaping", append([]any{"sandbox", d.id}, m.lastWordsOf(d.id)...)...)
		// Counted unless another end (an API kill) took it first; a reap
		// that failed is retried by the next start, the death stands.
		if err := m.kill(ctx, d.id, "exited", initDead); !errors.Is(err, ErrNotFound) {
			m.observer().Died(d.runtime)
		}
	}
	for _, sb := range pooled {
		m.log.Warn("pooled sandbox init exited; reaping", append([]any{"sandbox", sb.rec.ID}, m.lastWords(sb.rec.ID, sb.rt)...)...)
		m.observer().Died(sb.rec.Runtime)
		sb.closeAgent()
		_ = m.reap(context.WithoutCancel(ctx), sb.rec.ID, sb.rec.Runtime, sb.rt)
	}
}

// watchExit arms a pidfd on sb's init whose end wakes the watchdog. Where
// that fails the watchdog falls back to sweeping every watchEvery.
func (m *Manager) watchExit(sb *Sandbox) {
	if sb.rt == nil || sb.rt.Pid() <= 0 {
		return
	}
	// The watch ends with the process (a kill or pause deletes it).
	pid := sb.rt.Pid()
	if _, err := runtime.NotifyExit(pid, func() { m.noteExit(pid) }); err != nil {
		m.unwatched.Store(true)
		m.exited.all()
		m.kickWatchdog() // picks up the shorter interval
		m.log.Warn("cannot watch a sandbox's init; sweeping /proc instead", "sandbox", sb.rec.ID, "err", err)
	}
}

// noteExit has the watchdog look at the sandbox whose init was pid now.
func (m *Manager) noteExit(pid int) {
	m.exited.add(pid)
	m.kickWatchdog()
}

// kickWatchdog wakes RunWatchdog now.
func (m *Manager) kickWatchdog() {
	select {
	case m.deathKick <- struct{}{}:
	default:
	}
}

// dead lists running sandboxes whose init pid no longer lives, and takes
// the dead ones out of the warm pools (the caller reaps them). Only inits
// whose pid is in pids are looked at (nil: all), so that a burst of kills,
// each of whose ends wakes the watchdog, does not read every live
// sandbox's /proc entry once per kill.
func (m *Manager) dead(pids map[int]bool) (running []deadSandbox, pooled []*Sandbox) {
	m.mu.Lock()
	defer m.mu.Unlock()
	initDead := func(sb *Sandbox) bool {
		return (pids == nil || sb.rt != nil && pids[sb.rt.Pid()]) && initDead(sb)
	}
	for id, sb := range m.sandboxes {
		if initDead(sb) {
			running = append(running, deadSandbox{id, sb.rec.Runtime})
		}
	}
	for _, p := range m.pools {
		live := p.ready[:0]
		for _, sb := range p.ready {
			if initDead(sb) {
				pooled = append(pooled, sb)
			} else {
				live = append(live, sb)
			}
		}
		clear(p.ready[len(live):])
		p.ready = live
	}
	return running, pooled
}

// initDead reports whether sb runs (not paused) and its init pid is gone.
func initDead(sb *Sandbox) bool {
	return sb.rt != nil && sb.rt.Pid() > 0 && !processAlive(sb.rt.Pid())
}

// processAlive is runtime.ProcessAlive (a variable for the tests that count
// the watchdog's reads of /proc).
var processAlive = runtime.ProcessAlive

// deadSandbox names a running sandbox found dead.
type deadSandbox struct{ id, runtime string }

// lastWordsOf is lastWords of sandbox id, if the manager still has it.
func (m *Manager) lastWordsOf(id string) []any {
	m.mu.Lock()
	var rt runtime.Sandbox
	if sb := m.sandboxes[id]; sb != nil {
		rt = sb.rt
	}
	m.mu.Unlock()
	return m.lastWords(id, rt)
}
