package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/telemetry"
)

// SetTelemetry serves metrics and logs from st (nil: metrics are a single
// fresh sample, logs are empty).
func (s *Server) SetTelemetry(st *telemetry.Store) { s.tel = st }

// metrics answers GET /sandboxes/{id}/metrics: the sandbox's samples
// within start..end (unix seconds; default all it has), one per
// telemetry.Step. A window before the sandbox existed holds none. A running
// sandbox with no sample in a window that includes now (it was created
// less than a Step ago) gets one fresh sample. An ended sandbox's history
// is served while it is kept.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	win, ok := window(w, r)
	if !ok {
		return
	}
	if s.tel == nil {
		s.currentMetric(w, r, id)
		return
	}
	samples, known := s.tel.Samples(id, win)
	in, err := s.mgr.Get(id)
	if !known && err != nil {
		writeErr(w, err)
		return
	}
	if len(samples) == 0 && err == nil && in.State == store.StateRunning && win.Contains(time.Now()) {
		s.currentMetric(w, r, id) // none taken yet (a fresh sandbox): one now
		return
	}
	out := make([]metric, 0, len(samples))
	for _, smp := range samples {
		out = append(out, toMetric(smp))
	}
	writeJSON(w, http.StatusOK, out)
}

// currentMetric answers with one fresh sample (no telemetry store).
func (s *Server) currentMetric(w http.ResponseWriter, r *http.Request, id string) {
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
	writeJSON(w, http.StatusOK, []metric{toMetric(telemetry.Sample{
		Time: time.Now(), CPUCount: in.CPUCount, CPUUsedPct: u.CPUPct, MemUsed: u.MemUsed,
		MemTotal: int64(in.MemoryMB) << 20, MemCache: u.MemCache, DiskUsed: u.DiskUsed, DiskTotal: int64(in.DiskSizeMB) << 20,
	})})
}

func toMetric(smp telemetry.Sample) metric {
	t := smp.Time.UTC()
	return metric{Timestamp: t, TimestampUnix: t.Unix(), CPUCount: smp.CPUCount, CPUUsedPct: smp.CPUUsedPct,
		MemUsed: smp.MemUsed, MemTotal: smp.MemTotal, MemCache: smp.MemCache, DiskUsed: smp.DiskUsed, DiskTotal: smp.DiskTotal}
}

// maxBulkIDs bounds GET /sandboxes/metrics?sandbox_ids=.
const maxBulkIDs = 100

// bulkMetrics answers GET /sandboxes/metrics?sandbox_ids=a,b (also
// repeated): each listed sandbox's latest sample; sandboxes without one
// (unknown, not sampled yet) are left out.
func (s *Server) bulkMetrics(w http.ResponseWriter, r *http.Request) {
	ids, ok := sandboxIDs(w, r)
	if !ok {
		return
	}
	out := map[string]metric{}
	team := teamOf(r)
	for _, id := range ids {
		if s.tel == nil {
			break
		}
		if _, err := s.mgr.Owned(team, id); err != nil && !s.historyOwned(team, id) {
			continue // another team's sandbox is absent, as an unknown one
		}
		if smp, ok := s.tel.Latest(id); ok {
			out[id] = toMetric(smp)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sandboxes": out})
}

// sandboxIDs reads sandbox_ids (comma-separated, or repeated): 1 to
// maxBulkIDs ids, duplicates dropped; malformed ids are simply unknown.
func sandboxIDs(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	var ids []string
	seen := map[string]bool{}
	for _, v := range r.URL.Query()["sandbox_ids"] {
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	switch {
	case len(ids) == 0:
		WriteError(w, http.StatusBadRequest, "sandbox_ids is required")
		return nil, false
	case len(ids) > maxBulkIDs:
		WriteError(w, http.StatusBadRequest, "at most 100 sandbox_ids")
		return nil, false
	}
	return ids, true
}
