package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/store"
)

// Images live under Config.ImagesDir, one directory per image:
//
//	paused/<sandbox id>/   the image of a paused sandbox (removed on resume)
//	snapshots/<snap id>/   a named snapshot
//	tmp/<random>/          a fork's image, removed once its children run
//
// Each image holds mem/ (the runtime's memory checkpoint; absent for a
// files-only pause), upper/ (a copy of the writable layer) and, once both
// are complete, the empty file "complete". An image without it is a crash's
// leftover and is removed by Recover.
const (
	memDir       = "mem"
	upperDir     = "upper"
	completeFile = "complete"
)

func (m *Manager) pausedDir(id string) string { return filepath.Join(m.cfg.ImagesDir, "paused", id) }
func (m *Manager) snapshotDir(id string) string {
	return filepath.Join(m.cfg.ImagesDir, "snapshots", id)
}

// With Config.SharedDir, paused images and snapshots live there instead
// (paused/ and snapshots/ as above; fork scratch stays in ImagesDir), and
// their records name the storage (Persistence.Storage, Snapshot.Storage).

// pausedDirOf is where rec's paused image is: on the shared storage the
// record names, else on this node's disk.
func (m *Manager) pausedDirOf(rec *store.Sandbox) string {
	if rec.Persist.Storage != "" {
		return m.sharedPausedDir(rec.ID)
	}
	return m.pausedDir(rec.ID)
}

func (m *Manager) sharedPausedDir(id string) string {
	return filepath.Join(m.cfg.SharedDir, "paused", id)
}

// snapshotDirOf is where snap's image is.
func (m *Manager) snapshotDirOf(snap *store.Snapshot) string {
	if snap.Storage != "" {
		return filepath.Join(m.cfg.SharedDir, "snapshots", snap.ID)
	}
	return m.snapshotDir(snap.ID)
}

// imageStorage is the storage a new image of rec goes to: the shared one
// if this node has it, unless rec mounts volumes (their contents stay on
// this node, so it could not resume elsewhere).
func (m *Manager) imageStorage(rec *store.Sandbox) string {
	if m.cfg.SharedDir == "" || len(rec.Volumes) > 0 {
		return ""
	}
	return m.cfg.StorageID
}
func (m *Manager) scratchDir() string { return filepath.Join(m.cfg.ImagesDir, "tmp", NewID()) }

// imageComplete reports whether dir holds a complete image.
func imageComplete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, completeFile))
	return err == nil
}

// imageHasMemory reports whether the image at dir holds a memory checkpoint.
func imageHasMemory(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, memDir))
	return err == nil
}

// canCheckpoint checks that sb's backend can save memory.
func (m *Manager) canCheckpoint(rec *Sandbox) error {
	if m.cfg.ImagesDir == "" {
		return fmt.Errorf("%w: this node has no image directory for pause, fork and snapshots", ErrNotImpl)
	}
	rt, ok := m.runtimes[rec.rec.Runtime]
	_, restores := rt.(runtime.Restorer)
	if !ok || !rt.Capabilities().Checkpoint || !restores {
		return fmt.Errorf("%w: runtime %s cannot checkpoint memory (only runsc can on this node); "+
			"pause with {\"memory\": false} for a files-only pause", ErrNotImpl, rec.rec.Runtime)
	}
	return nil
}

// capture freezes sb and writes its image to dir: the memory checkpoint
// (if memory) and a copy of its writable layer, then the complete marker.
// The sandbox stays frozen (if it was running): the caller thaws or deletes
// it. It returns the image's size. On error dir is removed. The caller
// holds sb.op.
func (m *Manager) capture(ctx context.Context, sb *Sandbox, dir string, memory bool) (int64, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("image dir: %w", err)
	}
	err := m.captureInto(ctx, sb, dir, memory)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, completeFile), nil, 0o600)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return 0, fmt.Errorf("capture sandbox %s: %w", sb.rec.ID, err)
	}
	return dirSize(dir), nil
}

func (m *Manager) captureInto(ctx context.Context, sb *Sandbox, dir string, memory bool) error {
	if err := m.freeze(ctx, sb); err != nil {
		return err
	}
	if memory {
		c, ok := sb.rt.(runtime.Checkpointer)
		if !ok {
			return fmt.Errorf("%w: runtime cannot checkpoint", ErrNotImpl)
		}
		if err := c.Checkpoint(ctx, filepath.Join(dir, memDir), true); err != nil {
			return err
		}
	}
	return m.layers.SaveUpper(ctx, sb.rec.ID, filepath.Join(dir, upperDir))
}

// freeze stops every process of the running sandbox sb (sb.frozen; thaw
// undoes it) before its files are copied. The copy (cp -a, as host root)
// resolves paths in the tree the sandbox writes: a process of it still
// running could swap a directory for a symlink to a host path in the middle
// and have the copy read the host's files through it into the image (shown
// by integration TestBuildCopyNotLive). A sandbox that cannot be frozen is
// an error, never copied live.
func (m *Manager) freeze(ctx context.Context, sb *Sandbox) error {
	p, ok := sb.rt.(runtime.Pauser)
	if !ok {
		return fmt.Errorf("%w: the runtime cannot freeze sandbox %s for a copy of its files", ErrNotImpl, sb.rec.ID)
	}
	if err := p.Pause(ctx); err != nil {
		return fmt.Errorf("freeze sandbox %s for a copy of its files: %w", sb.rec.ID, err)
	}
	sb.frozen = true
	return nil
}

// thaw resumes a sandbox frozen by capture. If it cannot be resumed it is
// no use to anyone: it is killed.
func (m *Manager) thaw(ctx context.Context, sb *Sandbox) {
	p, ok := sb.rt.(runtime.Pauser)
	if !ok || !sb.frozen {
		return
	}
	sb.frozen = false
	if err := p.Resume(ctx); err != nil {
		m.log.Error("cannot thaw sandbox; killing it", "sandbox", sb.rec.ID, "err", err)
		go func() { _ = m.kill(context.WithoutCancel(ctx), sb.rec.ID, "thaw failed", nil) }()
	}
}

// dirSize is the disk used by the files under dir (allocated blocks).
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// removeImage deletes an image directory; a missing one is not an error.
func removeImage(dir string) error {
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove image %s: %w", dir, err)
	}
	return nil
}
