package api

import (
	"net/http"
	"time"
)

// metrics answers GET /sandboxes/{id}/metrics with the current sample of the
// sandbox's cgroup figures (E2B returns a series; one fresh point is valid).
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	in, err := s.mgr.Get(id)
	if err != nil {
		writeErr(w, err)
		return
	}
	u, err := s.mgr.Usage(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	now := time.Now().UTC()
	writeJSON(w, http.StatusOK, []metric{{
		Timestamp: now, TimestampUnix: now.Unix(), CPUCount: in.CPUCount, CPUUsedPct: u.CPUPct,
		MemUsed: u.MemUsed, MemTotal: int64(in.MemoryMB) << 20, MemCache: u.MemCache,
		DiskUsed: u.DiskUsed, DiskTotal: int64(in.DiskSizeMB) << 20,
	}})
}
