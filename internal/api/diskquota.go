package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// A team's disk quota (store.Quota.DiskMB) bounds what it keeps on disk:
// its volumes (their sizes), snapshots and paused sandboxes (their images)
// and templates (the layers of its builds, builder.Service.LayerBytes). Past it a request
// fails with sandbox.ErrBusy (429 with Retry-After), as the other quotas.

// diskQuota refuses a request that would store addMB more for the team
// when it already holds its disk quota or more. A snapshot's size is known
// only once taken, so a snapshot is refused when the team is at or past the
// quota (addMB 0).
func (s *Server) diskQuota(r *http.Request, addMB int64) error {
	team := teamOf(r)
	limit := s.diskLimit(team)
	if limit <= 0 {
		return nil
	}
	used, err := s.diskUsed(r.Context(), team, nil)
	if err != nil {
		return err
	}
	if used+addMB > limit || addMB == 0 && used >= limit {
		return diskErr(limit, used)
	}
	return nil
}

// buildDisk is the builder's DiskCheck: a build of the team's template
// starts only below the team's disk quota, and fails once the layers it
// has committed so far (building) take the team past it.
func (s *Server) buildDisk(ctx context.Context, templateID string, building []string) error {
	if s.tenants == nil {
		return nil
	}
	team, err := s.tenants.st.TemplateOwner(ctx, templateID)
	if err != nil {
		return fmt.Errorf("template %s: owner: %w", templateID, err)
	}
	limit := s.diskLimit(team)
	if limit <= 0 {
		return nil
	}
	used, err := s.diskUsed(ctx, team, building)
	if err != nil {
		return err
	}
	if used > limit || building == nil && used >= limit {
		return diskErr(limit, used)
	}
	return nil
}

func diskErr(limit, used int64) error {
	return fmt.Errorf("%w: team quota: %d MiB of disk (volumes, snapshots, paused sandboxes, templates, their uploads, build logs and build records hold %d MiB); delete some to free space", sandbox.ErrBusy, limit, used)
}

// diskLimit is team's disk quota in MiB (0 or less: none; the default
// team has none).
func (s *Server) diskLimit(team string) int64 {
	if s.tenants == nil || team == "" {
		return 0
	}
	return s.tenants.effective(team).DiskMB
}

// diskUsed is the MiB team holds: volumes, snapshots (its templates' start
// command snapshots too), paused sandboxes' images (on every node of a
// cluster: store.PausedBytes), template layers (plus building, the layers of a build in
// progress), the files its templates' COPY steps uploaded and its builds'
// logs.
func (s *Server) diskUsed(ctx context.Context, team string, building []string) (int64, error) {
	var used int64
	if s.vols != nil {
		vs, err := s.vols.List(ctx, team)
		if err != nil {
			return 0, err
		}
		for _, v := range vs {
			used += v.SizeMB
		}
	}
	owned := func(id string) (bool, error) {
		t, err := s.tenants.st.TemplateOwner(ctx, id)
		return t == team, err
	}
	snaps, err := s.snapshotBytes(ctx, team, owned)
	if err != nil {
		return 0, err
	}
	paused, err := s.tenants.st.PausedBytes(ctx, team)
	if err != nil {
		return 0, err
	}
	used += mib(snaps) + mib(paused)
	var bytes int64
	if s.builds != nil {
		if bytes, err = s.builds.LayerBytes(ctx, owned, building); err != nil {
			return 0, err
		}
		up, err := s.builds.UploadBytes(owned)
		if err != nil {
			return 0, err
		}
		logs, err := s.builds.LogBytes(ctx, owned)
		if err != nil {
			return 0, err
		}
		bytes += up + logs
	}
	return used + mib(bytes), nil
}

// mib rounds n bytes up to MiB.
func mib(n int64) int64 { return (n + 1<<20 - 1) >> 20 }

// snapshotBytes is the size of team's snapshots: those it took and the
// memory snapshots its templates' start commands left (a build's, recorded
// under no team: charged to the template's owner).
func (s *Server) snapshotBytes(ctx context.Context, team string, owned func(templateID string) (bool, error)) (int64, error) {
	snaps, err := s.tenants.st.AllSnapshots(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, sn := range snaps {
		mine := !sn.ForBuild && sn.Team == team
		if sn.ForBuild {
			if mine, err = owned(sn.TemplateID); err != nil {
				return 0, err
			}
		}
		if mine {
			n += sn.Bytes
		}
	}
	return n, nil
}
