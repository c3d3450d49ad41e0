package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/store"
)

// Volumes mounts named volumes into sandboxes (implemented by
// *volume.Manager).
type Volumes interface {
	// Ensure checks that the volumes exist and are mounted on the host for
	// a runtime with (userNS) or without a user namespace.
	Ensure(ctx context.Context, ids []string, userNS bool) error
	// Source is the host directory bound into such a sandbox.
	Source(id string, userNS bool) string
}

// SetVolumes gives the manager its volumes; without them a create that
// asks for volume mounts is refused.
func (m *Manager) SetVolumes(v Volumes) { m.volumes = v }

// mountVolumes makes rec's volumes ready for its runtime. rec is stored
// before (see Volumes.Ensure: a volume delete then sees the sandbox).
func (m *Manager) mountVolumes(ctx context.Context, rec *store.Sandbox, userNS bool) error {
	if len(rec.Volumes) == 0 {
		return nil
	}
	if m.volumes == nil {
		return fmt.Errorf("%w: this node serves no volumes", ErrInvalid)
	}
	ids := make([]string, len(rec.Volumes))
	for i, v := range rec.Volumes {
		ids[i] = v.VolumeID
	}
	if err := m.volumes.Ensure(ctx, ids, userNS); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// volumeBinds are rec's volumes as bind mounts for its runtime.
func (m *Manager) volumeBinds(rec *store.Sandbox, userNS bool) []runtime.Mount {
	out := make([]runtime.Mount, 0, len(rec.Volumes))
	for _, v := range rec.Volumes {
		out = append(out, runtime.Mount{Source: m.volumes.Source(v.VolumeID, userNS), Destination: v.Path, ReadOnly: v.ReadOnly})
	}
	return out
}

// VolumeUsers returns the sandboxes (running, paused or being created)
// whose record mounts volume id.
func (m *Manager) VolumeUsers(ctx context.Context, id string) ([]string, error) {
	recs, err := m.store.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range recs {
		if slices.ContainsFunc(r.Volumes, func(v store.VolumeMount) bool { return v.VolumeID == id }) {
			out = append(out, r.ID)
		}
	}
	return out, nil
}

// refuseVolumes answers fork and snapshot of a sandbox with volume mounts:
// a copy would share the volumes' live contents, not a copy of them, so
// neither is offered.
func (m *Manager) refuseVolumes(id, what string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sb, ok := m.sandboxes[id]; ok && len(sb.rec.Volumes) > 0 {
		return fmt.Errorf("%w: sandbox %s has volume mounts; %s of a sandbox with volumes is not supported", ErrConflict, id, what)
	}
	return nil
}

// createWithVolumes is a cold start (no pool, no template snapshot: those
// sandboxes were started without the mounts) with o's volumes.
func (m *Manager) createWithVolumes(ctx context.Context, tmpl Template, rtName string, res Resources, o CreateOpts) (Info, error) {
	if o.AutoPause && !m.runtimes[rtName].Capabilities().Checkpoint {
		o.AutoPauseFilesOnly = true
	}
	if err := m.admit(ctx, rtName, o.Team); err != nil {
		return Info{}, err
	}
	defer m.release(rtName)
	sb, err := m.coldStart(ctx, tmpl, rtName, res, o.Volumes...)
	if errors.Is(err, errAgentStart) && ctx.Err() == nil {
		m.log.Warn("retrying create once", "err", err) // as create does
		sb, err = m.coldStart(ctx, tmpl, rtName, res, o.Volumes...)
	}
	if err != nil {
		return Info{}, err
	}
	return m.activate(ctx, sb, o)
}
