package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// Snapshot captures a running sandbox (memory and files; it is frozen for
// that long, then continues) as a named, durable snapshot that new
// sandboxes can be created from (CreateOpts.Template = its id or name).
// The image counts against the image quota.
func (m *Manager) Snapshot(ctx context.Context, id, name string) (store.Snapshot, error) {
	if err := CheckSnapshotName(name); err != nil {
		return store.Snapshot{}, err
	}
	if name != "" {
		if _, err := m.store.TeamSnapshot(ctx, m.teamOf(id), name); err == nil {
			return store.Snapshot{}, fmt.Errorf("%w: a snapshot named %q exists", ErrConflict, name)
		}
	}
	if err := m.refuseVolumes(id, "snapshot"); err != nil {
		return store.Snapshot{}, err
	}
	sid := "snap" + NewID()[:16]
	t0 := time.Now()
	storage := ""
	if m.cfg.SharedDir != "" {
		storage = m.cfg.StorageID // volumes are refused above
	}
	dir, src, err := m.captureRunning(ctx, id, m.snapshotDirOf(&store.Snapshot{ID: sid, Storage: storage}), true)
	if err != nil {
		return store.Snapshot{}, err
	}
	defer func() { m.observer().Lifecycle("snapshot", src.Runtime, time.Since(t0), nil) }()
	snap := store.Snapshot{
		ID: sid, Team: src.Team, Name: name, SandboxID: id, TemplateID: src.TemplateID, Build: src.Build, Runtime: src.Runtime,
		CreatedAt: time.Now().UTC(), CPUCount: src.CPUCount, MemoryMB: src.MemoryMB, DiskSizeMB: src.DiskSizeMB,
		InitSecret: src.InitSecret, EnvVars: src.EnvVars, Bytes: dirSize(dir), Storage: storage,
	}
	if err := m.store.PutSnapshot(ctx, &snap); err != nil {
		_ = removeImage(dir)
		return store.Snapshot{}, err
	}
	m.eventCtx(ctx, id, "snapshot", "snapshot", sid, "name", name)
	return snap, nil
}

// CheckSnapshotName is ErrInvalid for a snapshot name other than ""
// (none) or a validSnapshotName.
func CheckSnapshotName(name string) error {
	if name != "" && !validSnapshotName(name) {
		return fmt.Errorf("%w: snapshot name must be 1-64 chars of [a-z0-9._-]", ErrInvalid)
	}
	return nil
}

// validSnapshotName: names share the template namespace, so they are
// plain lower-case words.
func validSnapshotName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("._-", c)) {
			return false
		}
	}
	return true
}

// Snapshots lists snapshots, newest first; sandboxID filters by source.
func (m *Manager) Snapshots(ctx context.Context, sandboxID string) ([]store.Snapshot, error) {
	all, err := m.store.ListSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	out := []store.Snapshot{}
	for _, s := range all {
		if !s.ForBuild && (sandboxID == "" || s.SandboxID == sandboxID) {
			out = append(out, *s)
		}
	}
	return out, nil
}

// DeleteSnapshot removes a snapshot (by id) and its image. Sandboxes
// created from it are not affected.
func (m *Manager) DeleteSnapshot(ctx context.Context, id string) error {
	snap, err := m.store.GetSnapshot(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("snapshot %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return err
	}
	return m.deleteSnapshot(ctx, snap)
}

// DeleteOwnedSnapshot removes team's snapshot key (its id or name: the
// SDK's deleteSnapshot); another team's answers as an unknown one.
func (m *Manager) DeleteOwnedSnapshot(ctx context.Context, team, key string) error {
	snap, err := m.OwnedSnapshot(ctx, team, key)
	if err != nil {
		return err
	}
	return m.deleteSnapshot(ctx, snap)
}

// deleteSnapshot removes snap's record, then its image.
func (m *Manager) deleteSnapshot(ctx context.Context, snap *store.Snapshot) error {
	// The record first: a record left without its image would make
	// creates fail; an image left without its record is reaped.
	if err := m.store.DeleteSnapshot(ctx, snap.ID); err != nil {
		return err
	}
	defer m.DiskFreed()
	return removeImage(m.snapshotDirOf(snap))
}

// createFromSnapshot starts a sandbox from a snapshot: resources and
// runtime are the snapshot's (a memory image restores only into the same
// limits); a request asking for others is refused.
func (m *Manager) createFromSnapshot(ctx context.Context, snap *store.Snapshot, o CreateOpts) (Info, error) {
	if o.Runtime != "" && o.Runtime != snap.Runtime {
		return Info{}, fmt.Errorf("%w: snapshot %s runs on %s", ErrInvalid, snap.ID, snap.Runtime)
	}
	r := o.Resources
	if (r.CPUCount != 0 && r.CPUCount != snap.CPUCount) || (r.MemoryMB != 0 && r.MemoryMB != snap.MemoryMB) ||
		(r.DiskSizeMB != 0 && r.DiskSizeMB != snap.DiskSizeMB) {
		return Info{}, fmt.Errorf("%w: a sandbox from snapshot %s keeps its resources", ErrInvalid, snap.ID)
	}
	rec := newRecord(Template{Name: snap.TemplateID, Build: snap.Build}, snap.Runtime, Resources{CPUCount: snap.CPUCount, MemoryMB: snap.MemoryMB, DiskSizeMB: snap.DiskSizeMB})
	rec.InitSecret = snap.InitSecret
	rec.Metadata, rec.EnvVars = o.Metadata, o.EnvVars
	if rec.EnvVars == nil {
		rec.EnvVars = snap.EnvVars
	}
	applyLifecycle(&rec, o)
	rec.Team = o.Team
	return m.startChild(ctx, rec, m.snapshotDirOf(snap), o.Timeout)
}

// snapshotFor finds the snapshot of team a create names, when no template
// has that name (templates win). Another team's snapshot is not found.
func (m *Manager) snapshotFor(ctx context.Context, team, name string) (*store.Snapshot, bool) {
	if name == "" || m.cfg.ImagesDir == "" {
		return nil, false
	}
	if _, err := m.templateFor(team, name); err == nil {
		return nil, false
	}
	snap, err := m.store.TeamSnapshot(ctx, team, name)
	return snap, err == nil
}

// fromTemplateSnapshot creates the sandbox by restoring its template's
// snapshot (start command already running and ready) when the runtime and
// resources match it. ok is false when it does not apply or fails (the
// caller then starts cold; a failure is logged).
func (m *Manager) fromTemplateSnapshot(ctx context.Context, t Template, rtName string, res Resources, o CreateOpts) (Info, bool) {
	snap, ok := m.templateSnapshot(ctx, t, rtName, res)
	if !ok {
		return Info{}, false
	}
	o.Resources = Resources{}
	in, err := m.createFromSnapshot(ctx, snap, o)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("template snapshot did not restore; starting cold", "template", t.Name, "snapshot", snap.ID, "err", err)
		}
		return Info{}, false
	}
	return in, true
}

// templateSnapshot is t's snapshot when a create of t on rtName with res
// restores it (runtime and resources match).
func (m *Manager) templateSnapshot(ctx context.Context, t Template, rtName string, res Resources) (*store.Snapshot, bool) {
	if t.Snapshot == "" || m.cfg.ImagesDir == "" {
		return nil, false
	}
	snap, err := m.store.GetSnapshot(ctx, t.Snapshot)
	if err != nil || snap.Runtime != rtName || snap.CPUCount != res.CPUCount || snap.MemoryMB != res.MemoryMB || snap.DiskSizeMB != res.DiskSizeMB {
		return nil, false
	}
	return snap, true
}

// SnapshotForBuild snapshots sandbox id (memory included) as the snapshot
// of a template build: recorded under the template and build given, not
// listed. Runtimes without checkpoints answer ErrNotImpl.
func (m *Manager) SnapshotForBuild(ctx context.Context, id, templateID, build string) (string, error) {
	m.mu.Lock()
	sb, ok := m.sandboxes[id]
	m.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("%w: sandbox %s", ErrNotFound, id)
	}
	if rt, ok := m.runtimes[sb.rec.Runtime]; !ok || !rt.Capabilities().Checkpoint || m.cfg.ImagesDir == "" {
		return "", fmt.Errorf("%w: runtime %s keeps no memory snapshots", ErrNotImpl, sb.rec.Runtime)
	}
	snap, err := m.Snapshot(ctx, id, "")
	if err != nil {
		return "", err
	}
	snap.TemplateID, snap.Build, snap.ForBuild, snap.EnvVars = templateID, build, true, nil
	if err := m.store.PutSnapshot(ctx, &snap); err != nil {
		_ = m.DeleteSnapshot(context.WithoutCancel(ctx), snap.ID)
		return "", err
	}
	return snap.ID, nil
}
