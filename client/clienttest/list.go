package clienttest

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// list serves GET /v2/sandboxes: state and metadata filters, newest first,
// pages of PageSize with the index of the next item as X-Next-Token.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	md, err := ParseMetadataFilter(q.Get("metadata"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	states := strings.Split(q.Get("state"), ",")
	if q.Get("state") != "" && !slices.Contains(states, "running") {
		writeJSON(w, http.StatusOK, []any{}) // every fake sandbox is running
		return
	}
	var items []map[string]any
	for _, sb := range slices.Backward(s.Sandboxes()) {
		if matches(sb.Metadata, md) && (q.Get("template") == "" || q.Get("template") == sb.TemplateID) {
			items = append(items, listedJSON(sb))
		}
	}
	start, _ := strconv.Atoi(q.Get("nextToken"))
	if start < 0 || start > len(items) {
		WriteError(w, http.StatusBadRequest, "bad nextToken")
		return
	}
	end := min(start+s.pageSize(q.Get("limit")), len(items))
	if end < len(items) {
		w.Header().Set("X-Next-Token", strconv.Itoa(end))
	}
	writeJSON(w, http.StatusOK, append([]map[string]any{}, items[start:end]...))
}

func (s *Server) pageSize(limit string) int {
	n := s.PageSize
	if l, err := strconv.Atoi(limit); err == nil && l > 0 && l < n {
		n = l
	}
	return max(n, 1)
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
