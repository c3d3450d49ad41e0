package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// adoptPaused keeps a paused record whose image is complete, releasing
// whatever host resources a pause interrupted by a crash left behind (they
// are idempotent to release). Paused sandboxes have no deadline.
func (m *Manager) adoptPaused(ctx context.Context, rec *store.Sandbox) error {
	switch dir := m.pausedDirOf(rec); {
	case rec.Persist.Storage != "" && rec.Persist.Storage != m.cfg.StorageID:
		return fmt.Errorf("paused image is on storage %q, this node has %q", rec.Persist.Storage, m.cfg.StorageID)
	case rec.Persist.Storage != "" && !imageComplete(dir):
		// Shared storage may be unreachable for a while: keep the record
		// (a resume fails until the image is back) rather than lose it.
		m.log.Error("paused image on shared storage is missing or incomplete; keeping the sandbox", "sandbox", rec.ID, "image", dir)
	case rec.Persist.Storage == "" && (m.cfg.ImagesDir == "" || !imageComplete(dir)):
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

// adoptResuming handles a record left resuming by a crash of this node
// mid-resume: its lease is the same node's again, so no other node can
// have taken the record (ClaimPaused wants paused); whatever the resume
// built is released and the sandbox is paused again, on its image.
func (m *Manager) adoptResuming(ctx context.Context, rec *store.Sandbox) error {
	if rec.Persist.Storage == "" || !imageComplete(m.pausedDirOf(rec)) {
		return errors.New("resume interrupted and its image is gone")
	}
	paused := *rec
	paused.State, paused.SandboxIP = store.StatePaused, ""
	if err := m.store.Transition(ctx, &paused, store.StateResuming); err != nil {
		return err
	}
	return m.adoptPaused(ctx, &paused)
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
		paused[id] = sb.rec.State == store.StatePaused && sb.rec.Persist.Storage == ""
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
		if s.Storage != "" {
			continue // reapShared; never dropped for a missing image (the storage may be away)
		}
		if imageComplete(m.snapshotDir(s.ID)) {
			keep[s.ID] = true
			continue
		}
		m.log.Warn("snapshot image is gone; dropping the snapshot", "snapshot", s.ID)
		_ = m.store.DeleteSnapshot(ctx, s.ID)
	}
	m.reapDirs(filepath.Join(m.cfg.ImagesDir, "snapshots"), keep)
	m.reapShared(ctx)
}

// sharedGrace is how old an image on shared storage must be before it is
// reaped for want of a record: another node may be writing it (an image is
// complete before its record is written).
const sharedGrace = time.Hour

// reapShared removes images on the shared storage that no record of any
// node owns and that are older than sharedGrace.
func (m *Manager) reapShared(ctx context.Context) {
	if m.cfg.SharedDir == "" {
		return
	}
	sandboxes, snapshots, err := m.store.SharedImages(ctx)
	if err != nil {
		m.log.Warn("list shared images", "err", err)
		return
	}
	old := time.Now().Add(-sharedGrace)
	m.reapDirsBefore(filepath.Join(m.cfg.SharedDir, "paused"), sandboxes, old)
	m.reapDirsBefore(filepath.Join(m.cfg.SharedDir, "snapshots"), snapshots, old)
}

// reapDirs removes the subdirectories of dir whose name keep does not hold true.
func (m *Manager) reapDirs(dir string, keep map[string]bool) {
	m.reapDirsBefore(dir, keep, time.Time{})
}

// reapDirsBefore is reapDirs for subdirectories last modified before
// before (zero: any).
func (m *Manager) reapDirsBefore(dir string, keep map[string]bool, before time.Time) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if info, err := e.Info(); !before.IsZero() && (err != nil || info.ModTime().After(before)) {
			continue
		}
		if !keep[e.Name()] {
			m.log.Warn("reaping orphan image", "image", filepath.Join(dir, e.Name()))
			_ = removeImage(filepath.Join(dir, e.Name()))
		}
	}
}
