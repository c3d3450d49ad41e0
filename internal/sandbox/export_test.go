package sandbox

import (
	"sync/atomic"
	"testing"
	"time"
)

// CountProcessAlive counts the liveness reads of inits until t ends.
func CountProcessAlive(t *testing.T) *atomic.Int32 {
	var n atomic.Int32
	orig := processAlive
	processAlive = func(pid int) bool { n.Add(1); return orig(pid) }
	t.Cleanup(func() { processAlive = orig })
	return &n
}

// PauseRetryPlan exposes pauseRetryPlan to the tests.
var PauseRetryPlan = pauseRetryPlan

// PoolFilling is the number of refills of key's pool in flight.
func (m *Manager) PoolFilling(key PoolKey) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.pools[key]; p != nil {
		return p.filling
	}
	return 0
}

// SetRefillWait sets refillWait until t ends.
func SetRefillWait(t *testing.T, d time.Duration) {
	old := refillWait
	refillWait = d
	t.Cleanup(func() { refillWait = old })
}

// StepWallClock makes sandbox id's deadline look as it would after the wall
// clock stepped forward by d (NTP, a VM's clock reset on resume): its
// record's EndAt, a wall time, moves back by d; nothing is re-armed (a
// step re-arms nothing either).
func (m *Manager) StepWallClock(id string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sb := m.sandboxes[id]; sb != nil {
		sb.rec.EndAt = sb.rec.EndAt.Add(-d)
	}
}

// ExpireNow runs sandbox id's deadline check now, as its timer does.
func (m *Manager) ExpireNow(id string) { m.expire(id) }
