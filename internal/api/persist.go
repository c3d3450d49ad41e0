package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// lifecycleOpts reads autoPause, autoPauseMemory and autoResume.
func lifecycleOpts(req newSandbox, o *sandbox.CreateOpts) error {
	o.AutoPause = req.AutoPause != nil && *req.AutoPause
	o.AutoPauseFilesOnly = req.AutoPauseMemory != nil && !*req.AutoPauseMemory
	if present(req.AutoResume) {
		var ar struct {
			Enabled bool `json:"enabled"`
		}
		if err := json.Unmarshal(req.AutoResume, &ar); err != nil {
			return fmt.Errorf("%w: autoResume must be {\"enabled\": bool}", sandbox.ErrInvalid)
		}
		o.AutoResume = ar.Enabled
	}
	return nil
}

func lifecycleOf(in sandbox.Info) lifecycle {
	l := lifecycle{OnTimeout: "kill", AutoResume: in.Persist.AutoResume}
	if in.AutoPause {
		l.OnTimeout = "pause"
	}
	return l
}

// pause answers POST /sandboxes/{id}/pause: 204, 409 if already paused.
// {"memory": false} keeps the files only.
func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	var req pauseReq
	if !decode(w, r, &req) {
		return
	}
	if err := s.mgr.Pause(r.Context(), id, req.Memory == nil || *req.Memory); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// resume is the deprecated POST /sandboxes/{id}/resume: 201 with the
// sandbox, 409 if it is running.
func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	var req resumeReq
	if !decode(w, r, &req) {
		return
	}
	d := 15 * time.Second // the v1 default
	var err error
	if req.Timeout != nil {
		d, err = seconds(*req.Timeout, s.mgr.Config().MaxTimeout)
	}
	if err == nil {
		if in, gerr := s.mgr.Get(id); gerr == nil && in.State == store.StateRunning {
			err = fmt.Errorf("%w: sandbox %s is already running", sandbox.ErrConflict, id)
		} else if gerr == nil && req.AutoPause != nil && *req.AutoPause != in.AutoPause {
			// Refused rather than ignored: a resume keeps the lifecycle the
			// sandbox was created with.
			err = fmt.Errorf("%w: autoPause cannot be changed on resume (the sandbox has autoPause=%t)", sandbox.ErrInvalid, in.AutoPause)
		}
	}
	var in sandbox.Info
	release := func() {}
	if err == nil {
		release, err = s.reserveResume(r, id)
	}
	defer func() { release() }()
	if err == nil {
		in, _, err = s.mgr.Connect(r.Context(), id, d, req.Memory != nil && !*req.Memory)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.sandboxResp(in))
}

// forkResult is E2B's SandboxForkResult: exactly one field is set.
type forkResult struct {
	Sandbox *sandboxResp `json:"sandbox,omitempty"`
	Error   *apiError    `json:"error,omitempty"`
}

// fork answers POST /sandboxes/{id}/fork {count?=1, timeout?=15}: 201 with
// one result per child.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	var req struct {
		Count   *int   `json:"count"`
		Timeout *int64 `json:"timeout"`
	}
	if !decode(w, r, &req) {
		return
	}
	count, d := 1, 15*time.Second
	if req.Count != nil {
		count = *req.Count
	}
	var err error
	if req.Timeout != nil {
		d, err = seconds(*req.Timeout, s.mgr.Config().MaxTimeout)
	}
	var res []sandbox.ForkResult
	var release func()
	if err == nil {
		release, err = s.reserveFork(r, id, count)
	}
	if err == nil {
		defer release()
		res, err = s.mgr.Fork(r.Context(), id, count, d)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]forkResult, len(res))
	for i, c := range res {
		if c.Err != nil {
			out[i].Error = &apiError{Code: statusOf(c.Err), Message: c.Err.Error()}
			continue
		}
		sr := s.sandboxResp(c.Info)
		out[i].Sandbox = &sr
	}
	writeJSON(w, http.StatusCreated, out)
}

// snapshotInfo is E2B's SnapshotInfo plus sbx's details.
type snapshotInfo struct {
	SnapshotID string    `json:"snapshotID"`
	Names      []string  `json:"names"`
	SandboxID  string    `json:"sandboxID"`
	TemplateID string    `json:"templateID"`
	CreatedAt  time.Time `json:"createdAt"`
	Bytes      int64     `json:"bytes"`
}

func snapInfo(sn store.Snapshot) snapshotInfo {
	names := []string{}
	if sn.Name != "" {
		names = append(names, sn.Name)
	}
	return snapshotInfo{SnapshotID: sn.ID, Names: names, SandboxID: sn.SandboxID, TemplateID: sn.TemplateID,
		CreatedAt: sn.CreatedAt, Bytes: sn.Bytes}
}

// snapshot answers POST /sandboxes/{id}/snapshots {name?}: 201 SnapshotInfo.
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	var req struct {
		Name string `json:"name"`
	}
	if !decode(w, r, &req) {
		return
	}
	release, err := s.admitSnapshot(r.Context(), teamOf(r), id)
	var sn store.Snapshot
	if err == nil {
		sn, err = s.mgr.Snapshot(r.Context(), id, req.Name)
		release()
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, snapInfo(sn))
}

// snapshots answers GET /snapshots?sandboxID=&name= (one page: sbx keeps
// few snapshots; limit bounds it).
func (s *Server) snapshots(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	all, err := s.mgr.Snapshots(r.Context(), q.Get("sandboxID"))
	if err != nil {
		writeErr(w, err)
		return
	}
	out := []snapshotInfo{}
	team := teamOf(r)
	for _, sn := range all {
		if sn.Team != team {
			continue
		}
		if name := q.Get("name"); name == "" || name == sn.Name || name == sn.ID {
			out = append(out, snapInfo(sn))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// storage answers GET /sbx/storage (sbx extension): disk held by paused
// sandboxes and snapshots, and the quota.
func (s *Server) storage(w http.ResponseWriter, r *http.Request) {
	if !principalOf(r).Admin { // node-wide figures: the operator's
		WriteError(w, http.StatusForbidden, "GET /sbx/storage needs an admin key")
		return
	}
	st, err := s.mgr.Storage(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
