package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/sbx-dev/sbx/internal/telemetry"
)

// logEntry is E2B's SandboxLogEntry.
type logEntry struct {
	Timestamp time.Time         `json:"timestamp"`
	Level     string            `json:"level"`
	Message   string            `json:"message"`
	Fields    map[string]string `json:"fields"`
}

// logLine is E2B's SandboxLog: line is a JSON object as envd's logs are
// (level, logger, message and the fields), which `e2b sandbox logs` parses.
type logLine struct {
	Timestamp time.Time `json:"timestamp"`
	Line      string    `json:"line"`
}

// maxLogs is the most entries one answer holds (E2B's limit default).
const maxLogs = 1000

// sandboxLogs returns the entries of sandbox id selected by q; a sandbox
// neither logged nor known is 404. Logs outlive their sandbox (see
// package telemetry for how long).
func (s *Server) sandboxLogs(w http.ResponseWriter, id string, q telemetry.LogQuery) ([]telemetry.Entry, bool) {
	var entries []telemetry.Entry
	known := false
	if s.tel != nil {
		entries, known = s.tel.Logs(id, q)
	}
	if !known {
		if _, err := s.mgr.Get(id); err != nil {
			writeErr(w, err)
			return nil, false
		}
	}
	return entries, true
}

// logsV2 answers GET /v2/sandboxes/{id}/logs?cursor&direction&level&limit&search.
func (s *Server) logsV2(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	q, ok := logQueryV2(w, r)
	if !ok {
		return
	}
	entries, ok := s.sandboxLogs(w, id, q)
	if !ok {
		return
	}
	out := make([]logEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, toLogEntry(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"logs": out})
}

// logQueryV2 reads the v2 query; a bad value is 400 naming it.
func logQueryV2(w http.ResponseWriter, r *http.Request) (telemetry.LogQuery, bool) {
	v := r.URL.Query()
	q := telemetry.LogQuery{Limit: maxLogs, Search: v.Get("search")}
	cursor, set, ok := queryInt(w, v, "cursor", 0, maxUnix*1000)
	if !ok {
		return q, false
	}
	if set {
		q.Cursor = time.UnixMilli(cursor)
	}
	switch v.Get("direction") {
	case "", "forward":
	case "backward":
		q.Backward = true
	default:
		WriteError(w, http.StatusBadRequest, "direction must be forward or backward")
		return q, false
	}
	if l := v.Get("level"); l != "" {
		if q.MinLevel, ok = telemetry.ParseLevel(l); !ok {
			WriteError(w, http.StatusBadRequest, "level must be debug, info, warn or error")
			return q, false
		}
	}
	if n, set, ok := queryInt(w, v, "limit", 0, maxLogs); !ok {
		return q, false
	} else if set {
		q.Limit = int(n)
	}
	if len(q.Search) > 256 {
		WriteError(w, http.StatusBadRequest, "search is longer than 256 bytes")
		return q, false
	}
	return q, true
}

// logsV1 answers GET /sandboxes/{id}/logs?start&limit (deprecated by E2B,
// used by `e2b sandbox logs`): start is in unix milliseconds.
func (s *Server) logsV1(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	v := r.URL.Query()
	q := telemetry.LogQuery{Limit: maxLogs}
	start, set, ok := queryInt(w, v, "start", 0, maxUnix*1000)
	if !ok {
		return
	}
	if set {
		q.Cursor = time.UnixMilli(start)
	}
	if n, set, ok := queryInt(w, v, "limit", 0, maxLogs); !ok {
		return
	} else if set {
		q.Limit = int(n)
	}
	entries, ok := s.sandboxLogs(w, id, q)
	if !ok {
		return
	}
	lines := make([]logLine, 0, len(entries))
	structured := make([]logEntry, 0, len(entries))
	for _, e := range entries {
		lines = append(lines, logLine{e.Time.UTC(), line(e)})
		structured = append(structured, toLogEntry(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"logs": lines, "logEntries": structured})
}

func toLogEntry(e telemetry.Entry) logEntry {
	f := make(map[string]string, len(e.Fields)+1)
	for k, v := range e.Fields {
		f[k] = v
	}
	f["logger"] = e.Logger
	return logEntry{Timestamp: e.Time.UTC(), Level: e.Level.String(), Message: e.Message, Fields: f}
}

// line encodes e as envd's JSON log line. The entry's own level, logger
// and message are written last, so a field cannot stand in for them.
func line(e telemetry.Entry) string {
	m := make(map[string]string, len(e.Fields)+4)
	for k, v := range e.Fields {
		m[k] = v
	}
	m["level"], m["logger"], m["message"] = e.Level.String(), e.Logger, e.Message
	b, _ := json.Marshal(m)
	return string(b)
}
