package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/volume"
)

// volumeMount is E2B's SandboxVolumeMount plus the sbx extension readOnly.
type volumeMount struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// volumeInfo is E2B's Volume; with a token it is VolumeAndToken.
type volumeInfo struct {
	VolumeID string `json:"volumeID"`
	Name     string `json:"name"`
	Token    string `json:"token,omitempty"`
	SizeMB   int64  `json:"sizeMB,omitempty"` // sbx extension: the volume's quota
}

// SetVolumes serves the volume routes (/volumes, /volumecontent) from vm
// and lets creates mount its volumes.
func (s *Server) SetVolumes(vm *volume.Manager) {
	s.vols = vm
	s.mgr.SetVolumes(vm)
	h := s.handle
	h("POST /volumes", s.createVolume)
	h("GET /volumes", s.listVolumes)
	h("GET /volumes/{vid}", s.getVolume)
	h("DELETE /volumes/{vid}", s.deleteVolume)
	s.contentRoutes()
}

func (s *Server) createVolume(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string `json:"name"`
		SizeMB int64  `json:"sizeMB,omitempty"` // sbx extension
	}
	if !decode(w, r, &req) {
		return
	}
	size := req.SizeMB
	if size == 0 {
		size = s.vols.DefaultSizeMB()
	}
	var v *store.Volume
	err := s.withDiskRoom(r, size, func() (err error) {
		v, err = s.vols.Create(r.Context(), teamOf(r), req.Name, req.SizeMB)
		return err
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, volumeInfo{VolumeID: v.ID, Name: v.Name, Token: v.Token, SizeMB: v.SizeMB})
}

func (s *Server) listVolumes(w http.ResponseWriter, r *http.Request) {
	vols, err := s.vols.List(r.Context(), teamOf(r))
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]volumeInfo, 0, len(vols))
	for _, v := range vols {
		out = append(out, volumeInfo{VolumeID: v.ID, Name: v.Name, SizeMB: v.SizeMB})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getVolume(w http.ResponseWriter, r *http.Request) {
	v, err := s.vols.Get(r.Context(), teamOf(r), r.PathValue("vid"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, volumeInfo{VolumeID: v.ID, Name: v.Name, Token: v.Token, SizeMB: v.SizeMB})
}

func (s *Server) deleteVolume(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var lerr error
	users := func(id string) []string {
		u, err := s.mgr.VolumeUsers(ctx, id)
		lerr = err
		if err != nil {
			return []string{"(unknown: " + err.Error() + ")"}
		}
		return u
	}
	err := s.vols.Delete(ctx, teamOf(r), r.PathValue("vid"), users)
	if lerr != nil {
		err = lerr
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	s.mgr.DiskFreed() // a deferred autoPause pause may fit now
	w.WriteHeader(http.StatusNoContent)
}

// volumeMounts validates a create's volumeMounts and resolves each name
// to the caller's volume; an unknown name is a 400 naming it.
func (s *Server) volumeMounts(team string, in []volumeMount) ([]store.VolumeMount, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if s.vols == nil {
		return nil, fmt.Errorf("%w: volumeMounts: this server has no volumes", sandbox.ErrInvalid)
	}
	paths := make([]string, len(in))
	for i, m := range in {
		paths[i] = m.Path
	}
	if err := volume.CheckMountPaths(paths); err != nil {
		return nil, fmt.Errorf("%w: volumeMounts: %w", sandbox.ErrInvalid, err)
	}
	out := make([]store.VolumeMount, len(in))
	for i, m := range in {
		v, err := s.vols.GetByName(context.Background(), team, m.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: volumeMounts[%d]: volume %q not found", sandbox.ErrInvalid, i, trunc(m.Name))
		}
		out[i] = store.VolumeMount{VolumeID: v.ID, Name: v.Name, Path: m.Path, ReadOnly: m.ReadOnly}
	}
	return out, nil
}

func trunc(s string) string { return truncate(s, 64) }

// mountsOf is a record's mounts as E2B lists them.
func mountsOf(in []store.VolumeMount) []volumeMount {
	var out []volumeMount
	for _, m := range in {
		out = append(out, volumeMount{Name: m.Name, Path: m.Path, ReadOnly: m.ReadOnly})
	}
	return out
}
