package api

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/audit"
)

// logEntry is E2B's SandboxLogEntry.
type logEntry struct {
	Timestamp time.Time         `json:"timestamp"`
	Level     string            `json:"level"`
	Message   string            `json:"message"`
	Fields    map[string]string `json:"fields"`
}

// sandboxLogs returns the audit records of a sandbox as log entries. Records
// survive the sandbox, so logs of a killed sandbox can still be read.
func (s *Server) sandboxLogs(w http.ResponseWriter, r *http.Request) ([]logEntry, bool) {
	id, ok := sandboxID(w, r)
	if !ok {
		return nil, false
	}
	limit := 1000
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			WriteError(w, http.StatusBadRequest, "limit must be 1-10000")
			return nil, false
		}
		limit = n
	}
	if s.AuditPath == "" {
		return []logEntry{}, true
	}
	recs, err := audit.ForSandbox(s.AuditPath, id, limit)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return nil, false
	}
	if len(recs) == 0 {
		if _, err := s.mgr.Get(id); err != nil {
			writeErr(w, err)
			return nil, false
		}
	}
	out := make([]logEntry, 0, len(recs))
	for _, rec := range recs {
		out = append(out, logEntry{Timestamp: rec.Time, Level: "info", Message: message(rec), Fields: rec.Fields})
	}
	return out, true
}

func message(r audit.Record) string {
	keys := make([]string, 0, len(r.Fields))
	for k := range r.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(r.Kind)
	for _, k := range keys {
		b.WriteString(" " + k + "=" + strconv.Quote(r.Fields[k]))
	}
	return b.String()
}

func (s *Server) logsV2(w http.ResponseWriter, r *http.Request) {
	if entries, ok := s.sandboxLogs(w, r); ok {
		writeJSON(w, http.StatusOK, map[string]any{"logs": entries})
	}
}

func (s *Server) logsV1(w http.ResponseWriter, r *http.Request) {
	entries, ok := s.sandboxLogs(w, r)
	if !ok {
		return
	}
	type line struct {
		Timestamp time.Time `json:"timestamp"`
		Line      string    `json:"line"`
	}
	lines := make([]line, 0, len(entries))
	for _, e := range entries {
		lines = append(lines, line{e.Timestamp, e.Message})
	}
	writeJSON(w, http.StatusOK, map[string]any{"logs": lines, "logEntries": entries})
}
