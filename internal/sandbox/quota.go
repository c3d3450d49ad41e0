package sandbox

import (
	"context"
	"fmt"

	"github.com/sbx-dev/sbx/internal/store"
)

// Storage is the disk held by paused sandboxes and snapshots.
type Storage struct {
	PausedBytes   int64 `json:"pausedBytes"`
	SnapshotBytes int64 `json:"snapshotBytes"`
	Paused        int   `json:"paused"`
	Snapshots     int   `json:"snapshots"`
	QuotaBytes    int64 `json:"quotaBytes"` // 0: unbounded
}

// Used is the total counted against the quota.
func (s Storage) Used() int64 { return s.PausedBytes + s.SnapshotBytes }

// Storage reports the disk used by images (sizes recorded when each image
// was written).
func (m *Manager) Storage(ctx context.Context) (Storage, error) {
	st := Storage{QuotaBytes: m.cfg.ImageQuota}
	m.mu.Lock()
	for _, sb := range m.sandboxes {
		if sb.rec.State == store.StatePaused {
			st.Paused++
			st.PausedBytes += sb.rec.Persist.ImageBytes
		}
	}
	m.mu.Unlock()
	snaps, err := m.store.ListSnapshots(ctx)
	if err != nil {
		return st, err
	}
	for _, s := range snaps {
		st.Snapshots++
		st.SnapshotBytes += s.Bytes
	}
	return st, nil
}

// checkQuota fails with ErrQuota if adding extra bytes of images would
// pass the quota (or, for extra 0, if the quota is already used up).
func (m *Manager) checkQuota(extra int64) error {
	if m.cfg.ImageQuota <= 0 {
		return nil
	}
	st, err := m.Storage(context.Background())
	if err != nil {
		return err
	}
	used := st.Used()
	if used+extra > m.cfg.ImageQuota || (extra == 0 && used >= m.cfg.ImageQuota) {
		return fmt.Errorf("%w: images would use %d of %d bytes (--image-quota-mb); delete snapshots or paused sandboxes",
			ErrQuota, used+extra, m.cfg.ImageQuota)
	}
	return nil
}
