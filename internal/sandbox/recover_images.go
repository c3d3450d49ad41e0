package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/sbx-dev/sbx/internal/store"
)

// adoptPaused keeps a paused record whose image is complete, releasing
// whatever host resources a pause interrupted by a crash left behind (they
// are idempotent to release). Paused sandboxes have no deadline.
func (m *Manager) adoptPaused(ctx context.Context, rec *store.Sandbox) error {
	if m.cfg.ImagesDir == "" || !imageComplete(m.pausedDir(rec.ID)) {
		return errors.New("paused image is missing or incomplete")
	}
	if err := m.releaseHost(ctx, rec.ID, rec.Runtime, nil); err != nil {
		m.log.Warn("paused sandbox: release host resources", "sandbox", rec.ID, "err", err)
	}
	m.mu.Lock()
	m.sandboxes[rec.ID] = &Sandbox{rec: *rec}
	m.mu.Unlock()
	return nil
}

// reapImages removes images no record owns: fork scratch, paused images of
// sandboxes that are not paused, snapshot directories without a snapshot
// record (and snapshot records whose image is gone).
func (m *Manager) reapImages(ctx context.Context) {
	if m.cfg.ImagesDir == "" {
		return
	}
	_ = removeImage(filepath.Join(m.cfg.ImagesDir, "tmp"))
	m.mu.Lock()
	paused := map[string]bool{}
	for id, sb := range m.sandboxes {
		paused[id] = sb.rec.State == store.StatePaused
	}
	m.mu.Unlock()
	m.reapDirs(filepath.Join(m.cfg.ImagesDir, "paused"), paused)
	snaps, err := m.store.ListSnapshots(ctx)
	if err != nil {
		m.log.Warn("list snapshots", "err", err)
		return
	}
	keep := map[string]bool{}
	for _, s := range snaps {
		if imageComplete(m.snapshotDir(s.ID)) {
			keep[s.ID] = true
			continue
		}
		m.log.Warn("snapshot image is gone; dropping the snapshot", "snapshot", s.ID)
		_ = m.store.DeleteSnapshot(ctx, s.ID)
	}
	m.reapDirs(filepath.Join(m.cfg.ImagesDir, "snapshots"), keep)
}

// reapDirs removes the subdirectories of dir whose name keep does not hold true.
func (m *Manager) reapDirs(dir string, keep map[string]bool) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !keep[e.Name()] {
			m.log.Warn("reaping orphan image", "image", filepath.Join(dir, e.Name()))
			_ = removeImage(filepath.Join(dir, e.Name()))
		}
	}
}
