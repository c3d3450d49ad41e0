package front

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// cursor is the front's nextToken for GET /v2/sandboxes: per node, the id
// and start ("<id>:<ns>", what a node's own nextToken holds) of the last
// sandbox listed from it ("" none yet; done: nothing left).
// A node missing from it (joined since the first page) starts afresh; a
// node gone since is dropped.
type cursor map[string]string

const done = "-"

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(tok string) (cursor, bool) {
	c := cursor{}
	if tok == "" {
		return c, true
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	return c, err == nil && json.Unmarshal(b, &c) == nil
}

// pagedItem is a listed sandbox, what orders it, and the node it came from.
type pagedItem struct {
	raw     json.RawMessage
	id      string
	started time.Time
	node    int
}

// listV2 answers GET /v2/sandboxes with one page over all live nodes: each
// is asked for a page of the client's limit after its own cursor, the
// pages are merged by start time (newest first, or oldest with
// order=asc) and cut at the limit; X-Next-Token carries every node's
// cursor, X-Total-Running the sum. Filters are the nodes' to apply.
func (f *Front) listV2(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
			f.fail(w, http.StatusBadRequest, "limit must be 1-100")
			return
		}
	}
	cur, ok := decodeCursor(q.Get("nextToken"))
	if !ok {
		f.fail(w, http.StatusBadRequest, "bad nextToken")
		return
	}
	ns := slices.DeleteFunc(f.live(r.Context(), nil), func(n *store.Node) bool { return cur[n.ID] == done })
	pages, ok := f.gather(w, r, ns, func(n *store.Node) *http.Request { return nodeQuery(r, q, cur[n.ID]) })
	if !ok {
		return
	}
	items, total := merge(pages, q.Get("order") == "asc", limit)
	if next := nextCursor(ns, pages, items, cur); next != nil {
		w.Header().Set("X-Next-Token", next.encode())
	}
	w.Header().Set("X-Total-Running", strconv.Itoa(total))
	w.Header().Set("Content-Type", "application/json")
	writeArray(w, items)
}

// writeArray writes the items' JSON as an array, as the nodes sent them
// (already valid: the page decoder checked them).
func writeArray(w io.Writer, items []pagedItem) {
	b := make([]byte, 0, 64<<10)
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it.raw...)
	}
	b = append(b, "]\n"...)
	_, _ = w.Write(b)
}

// nodeQuery is r with the node's own cursor as nextToken.
func nodeQuery(r *http.Request, q url.Values, after string) *http.Request {
	nq := url.Values{}
	for k, v := range q {
		nq[k] = v
	}
	nq.Del("nextToken")
	if after != "" {
		nq.Set("nextToken", base64.RawURLEncoding.EncodeToString([]byte(after)))
	}
	out := r.Clone(r.Context())
	out.URL.RawQuery = nq.Encode()
	return out
}

// merge takes up to limit items from the nodes' pages, each already in
// the order asked (newest first, or oldest with asc), by merging their
// heads: each node's items are taken as a prefix of its page (so its
// cursor is the last one taken), and only the heads are decoded. It also
// sums the nodes' X-Total-Running.
func merge(pages []nodePage, asc bool, limit int) ([]pagedItem, int) {
	total := 0
	heads := make([]*pagedItem, len(pages))
	next := make([]int, len(pages))
	for _, p := range pages {
		n, _ := strconv.Atoi(p.hdr.Get("X-Total-Running"))
		total += n
	}
	var out []pagedItem
	for len(out) < limit {
		best := -1
		for i, p := range pages {
			if heads[i] == nil && next[i] < len(p.items) {
				heads[i] = decodeItem(p.items[next[i]], i)
			}
			if heads[i] != nil && (best < 0 || before(heads[i], heads[best], asc)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out = append(out, *heads[best])
		heads[best] = nil
		next[best]++
	}
	return out, total
}

func decodeItem(raw json.RawMessage, node int) *pagedItem {
	var v struct {
		SandboxID string    `json:"sandboxID"`
		StartedAt time.Time `json:"startedAt"`
	}
	_ = json.Unmarshal(raw, &v)
	return &pagedItem{raw: raw, id: v.SandboxID, started: v.StartedAt, node: node}
}

// before: a comes first (the newer, or the older with asc; ties by id).
func before(a, b *pagedItem, asc bool) bool {
	c := a.started.Compare(b.started)
	if c == 0 {
		c = strings.Compare(a.id, b.id)
		return c < 0
	}
	return (c < 0) == asc
}

// nextCursor is the cursor after items (the page shown), or nil when every
// node has nothing left: a node whose whole page was shown and that had no
// next page is done; otherwise its cursor moves to the last of its items
// shown (or stays).
func nextCursor(ns []*store.Node, pages []nodePage, items []pagedItem, prev cursor) cursor {
	next, more := cursor{}, false
	shown := make([]int, len(ns))
	last := make([]string, len(ns))
	for _, it := range items {
		shown[it.node]++
		last[it.node] = it.id + ":" + strconv.FormatInt(it.started.UnixNano(), 10) // a node's nextToken: id and start
	}
	for i, n := range ns {
		switch {
		case shown[i] == len(pages[i].items) && pages[i].hdr.Get("X-Next-Token") == "":
			next[n.ID] = done
		case shown[i] > 0:
			next[n.ID], more = last[i], true
		default:
			next[n.ID], more = prev[n.ID], true
		}
	}
	if !more {
		return nil
	}
	return next
}
