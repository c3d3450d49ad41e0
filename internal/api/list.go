package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// listQuery is a parsed GET /v2/sandboxes query.
type listQuery struct {
	limit        int
	after        string    // nextToken: id of the last item of the previous page
	afterStarted time.Time // and its start (zero in a token of the id alone)
	states       map[string]bool
	metadata     map[string]string
	template     string // as given: a template id or alias
	templateID   string // the id the caller's team resolves template to ("": none)
	startedAfter time.Time
	asc          bool
}

// parseListQuery validates the v2 list query (contract §2).
func parseListQuery(q url.Values) (listQuery, error) {
	lq := listQuery{limit: 100}
	var err error
	if v := q.Get("limit"); v != "" {
		if lq.limit, err = strconv.Atoi(v); err != nil || lq.limit < 1 || lq.limit > 100 {
			return lq, fmt.Errorf("%w: limit must be 1-100", sandbox.ErrInvalid)
		}
	}
	if v := q.Get("nextToken"); v != "" {
		if lq.after, lq.afterStarted, err = parseCursor(v); err != nil {
			return lq, err
		}
	}
	// The JS SDK sends state=running,paused; the Python SDK's client repeats
	// the parameter (state=running&state=paused): every value counts.
	if lq.states, err = parseStates(strings.Join(q["state"], ",")); err != nil {
		return lq, err
	}
	if lq.metadata, err = ParseMetadataFilter(q.Get("metadata")); err != nil {
		return lq, err
	}
	lq.template = q.Get("template")
	if v := q.Get("startedAfter"); v != "" {
		if lq.startedAfter, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return lq, fmt.Errorf("%w: startedAfter must be RFC 3339", sandbox.ErrInvalid)
		}
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		lq.asc = true
	default:
		return lq, fmt.Errorf("%w: order must be asc or desc", sandbox.ErrInvalid)
	}
	return lq, nil
}

// ParseMetadataFilter decodes the SDK's double-encoded metadata filter: the
// parameter value (already query-decoded once) is itself a query string whose
// keys and values are URL-encoded once more. Filters are ANDed.
func ParseMetadataFilter(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	pairs, err := url.ParseQuery(v)
	if err != nil {
		return nil, fmt.Errorf("%w: bad metadata filter: %v", sandbox.ErrInvalid, err)
	}
	out := map[string]string{}
	for k, vs := range pairs {
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(vs[len(vs)-1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: bad metadata filter encoding", sandbox.ErrInvalid)
		}
		out[key] = val
	}
	return out, nil
}

func (lq listQuery) match(in sandbox.Info) bool {
	if lq.states != nil && !lq.states[wireState(in.State)] {
		return false
	}
	if lq.template != "" && !lq.fromTemplate(in) {
		return false
	}
	if in.StartedAt.Before(lq.startedAfter) { // at or after it, as E2B's
		return false
	}
	for k, v := range lq.metadata {
		if got, ok := in.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// fromTemplate reports whether in runs the template the filter names, as
// E2B's `template` takes "a template ID or alias": its id or alias as given,
// or the id the team's name for it resolves to (name:tag, namespace/name).
func (lq listQuery) fromTemplate(in sandbox.Info) bool {
	return in.TemplateID == lq.template || in.Alias == lq.template ||
		(lq.templateID != "" && in.TemplateID == lq.templateID)
}

// totalRunning is E2B's X-Total-Running: the running sandboxes of all its
// filters take, whatever its state filter, cursor and limit.
func (lq listQuery) totalRunning(all []sandbox.Info) int {
	lq.states = map[string]bool{wireRunning: true}
	n := 0
	for _, in := range all {
		if lq.match(in) {
			n++
		}
	}
	return n
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	lq, err := parseListQuery(r.URL.Query())
	if err != nil {
		writeErr(w, err)
		return
	}
	team := teamOf(r)
	if lq.template != "" {
		if id, _, ok := s.templateRef(team, lq.template); ok {
			lq.templateID = id
		}
	}
	all := s.listed(team)
	page, next := lq.page(all)
	out := make([]listedSandbox, 0, len(page))
	for _, in := range page {
		out = append(out, listed(in))
	}
	if next != "" {
		w.Header().Set("X-Next-Token", next)
	}
	w.Header().Set("X-Total-Running", strconv.Itoa(lq.totalRunning(all)))
	writeJSON(w, http.StatusOK, out)
}

// page filters all (newest first), applies order and the cursor, and returns
// one page and the token of the next ("" on the last page).
func (lq listQuery) page(all []sandbox.Info) ([]sandbox.Info, string) {
	var items []sandbox.Info
	for _, in := range all {
		if lq.match(in) {
			items = append(items, in)
		}
	}
	if lq.asc {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	items = lq.afterCursor(items)
	if len(items) <= lq.limit {
		return items, ""
	}
	items = items[:lq.limit]
	last := items[len(items)-1]
	return items, cursorOf(last)
}

// cursorOf is the nextToken after in: its id and start, so the next page
// starts after its place even when it has ended since.
func cursorOf(in sandbox.Info) string {
	return base64.RawURLEncoding.EncodeToString([]byte(in.ID + ":" + strconv.FormatInt(in.StartedAt.UnixNano(), 10)))
}

// parseCursor reads a nextToken: "<id>:<start ns>", or "<id>" alone (the
// cluster front's per-node cursors).
func parseCursor(tok string) (string, time.Time, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	id, ns, timed := strings.Cut(string(b), ":")
	n, nerr := strconv.ParseInt(ns, 10, 64)
	if err != nil || !sandbox.ValidID(id) || (timed && nerr != nil) {
		return "", time.Time{}, fmt.Errorf("%w: bad nextToken", sandbox.ErrInvalid)
	}
	if !timed {
		return id, time.Time{}, nil
	}
	return id, time.Unix(0, n), nil
}

// afterCursor drops from items (in the order asked) the cursor's item and
// those before it. A cursor whose sandbox has ended since is placed by its
// start and id, the order's keys (newest first, ties by id; reversed with
// asc): the page goes on after it, not from the start again.
func (lq listQuery) afterCursor(items []sandbox.Info) []sandbox.Info {
	if lq.after == "" {
		return items
	}
	for i, in := range items {
		if in.ID == lq.after {
			return items[i+1:]
		}
	}
	if lq.afterStarted.IsZero() {
		return items
	}
	for i, in := range items {
		if lq.comesAfter(in) {
			return items[i:]
		}
	}
	return nil
}

// comesAfter reports whether in is listed after the cursor's place.
func (lq listQuery) comesAfter(in sandbox.Info) bool {
	t := lq.afterStarted
	if lq.asc {
		return in.StartedAt.After(t) || (in.StartedAt.Equal(t) && in.ID < lq.after)
	}
	return in.StartedAt.Before(t) || (in.StartedAt.Equal(t) && in.ID > lq.after)
}

// listV1 is the deprecated GET /sandboxes: running sandboxes only (as E2B's,
// which lists paused ones under /v2 alone), metadata filter.
func (s *Server) listV1(w http.ResponseWriter, r *http.Request) {
	lq, err := parseListV1(r.URL.Query())
	if err != nil {
		writeErr(w, err)
		return
	}
	page, _ := lq.page(s.listed(teamOf(r)))
	out := make([]listedSandbox, 0, len(page))
	for _, in := range page {
		out = append(out, listed(in))
	}
	writeJSON(w, http.StatusOK, out)
}

// parseListV1 reads the v1 list's query: one page of the running
// sandboxes its metadata filter takes.
func parseListV1(q url.Values) (listQuery, error) {
	md, err := ParseMetadataFilter(q.Get("metadata"))
	return listQuery{limit: 1 << 30, metadata: md, states: map[string]bool{wireRunning: true}}, err
}

// listed is every sandbox of team but the template builder's own.
func (s *Server) listed(team string) []sandbox.Info {
	all := s.mgr.List()
	out := all[:0:0]
	for _, in := range all {
		if in.Team == team && !builder.IsBuildSandbox(in.Metadata) {
			out = append(out, in)
		}
	}
	return out
}
