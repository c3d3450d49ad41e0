package sandbox

import (
	"context"

	"github.com/sbx-dev/sbx/internal/store"
)

// DiskAdmit admits up to n more bytes of disk for team (a pause's image)
// or fails with the team's quota error; release ends the reservation
// (implemented by the API's disk ledger, which counts a team's paused
// sandboxes with its snapshots, volumes and templates).
type DiskAdmit func(ctx context.Context, team string, n int64) (release func(), err error)

// SetDiskAdmission makes every pause (the API's and a timed-out autoPause
// sandbox's) ask a first: a paused sandbox is not live, so without it a
// team's pauses held host disk past every bound of the team.
func (m *Manager) SetDiskAdmission(a DiskAdmit) { m.diskAdmit = a }

// admitPause reserves the most sb's pause image may hold (its memory, if
// saved, and its disk size) against its team's disk quota.
func (m *Manager) admitPause(ctx context.Context, sb *Sandbox, memory bool) (func(), error) {
	if m.diskAdmit == nil {
		return func() {}, nil
	}
	m.mu.Lock()
	team, n := sb.rec.Team, imageBound(&sb.rec, memory)
	m.mu.Unlock()
	return m.diskAdmit(ctx, team, n)
}

// imageBound is the most a pause image of rec may hold, in bytes.
func imageBound(rec *store.Sandbox, memory bool) int64 {
	n := int64(rec.DiskSizeMB) << 20
	if memory {
		n += int64(rec.MemoryMB) << 20
	}
	return n
}
