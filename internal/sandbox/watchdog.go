package sandbox

import (
	"context"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// watchEvery is how often the watchdog looks for sandboxes that died on
// their own (init exited, or a gVisor Sentry OOM-killed by the host).
const watchEvery = 2 * time.Second

// RunWatchdog reaps sandboxes whose init process is gone, until ctx ends.
// It reads /proc only, so it costs nothing per sandbox but a file read.
func (m *Manager) RunWatchdog(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, id := range m.dead() {
				m.log.Warn("sandbox init exited; reaping", append([]any{"sandbox", id}, m.lastWordsOf(id)...)...)
				_ = m.kill(ctx, id, "exited", initDead)
			}
		}
	}
}

// dead lists running sandboxes whose init pid no longer lives.
func (m *Manager) dead() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id, sb := range m.sandboxes {
		if initDead(sb) {
			out = append(out, id)
		}
	}
	return out
}

// initDead reports whether sb runs (not paused) and its init pid is gone.
func initDead(sb *Sandbox) bool {
	return sb.rt != nil && sb.rt.Pid() > 0 && !runtime.ProcessAlive(sb.rt.Pid())
}

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
