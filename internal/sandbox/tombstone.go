package sandbox

import "time"

// Tombstones remember recently ended sandboxes so that traffic for them is
// answered "not running" (502, which the SDK's isRunning reads) rather than
// "unknown" (404). Bounded in size and age.
const (
	maxTombstones = 10000
	tombstoneTTL  = time.Hour
)

// buryLocked records id as ended. m.mu must be held.
func (m *Manager) buryLocked(id string) {
	if m.tombs == nil {
		m.tombs = map[string]time.Time{}
	}
	if len(m.tombs) >= maxTombstones {
		cutoff := time.Now().Add(-tombstoneTTL)
		for k, t := range m.tombs {
			if t.Before(cutoff) || len(m.tombs) >= maxTombstones {
				delete(m.tombs, k)
			}
		}
	}
	m.tombs[id] = time.Now()
}

// Ended reports whether id belonged to a sandbox that ended recently.
func (m *Manager) Ended(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tombs[id]
	return ok && time.Since(t) < tombstoneTTL
}
