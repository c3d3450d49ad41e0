package front

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/sbx-dev/sbx/internal/store"
)

// list answers the deprecated GET /sandboxes (no pages) with the sandboxes
// of every live node: the request (its key, filters) is made to each, the
// arrays joined. A node that fails fails the list (a partial list would
// read as sandboxes gone). GET /v2/sandboxes is paged across nodes
// (page.go).
func (f *Front) list(w http.ResponseWriter, r *http.Request) {
	ns := f.live(r.Context(), nil)
	pages, ok := f.gather(w, r, ns, func(*store.Node) *http.Request { return r })
	if !ok {
		return
	}
	all := []json.RawMessage{}
	for _, p := range pages {
		all = append(all, p.items...)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(all)
}

// nodePage is one node's answer to a list.
type nodePage struct {
	items []json.RawMessage
	hdr   http.Header
}

// gather makes the request req(n) to every node of ns at once and returns
// their pages in ns's order; on a node's failure it answers w (the node's
// own non-200 answer, or 502) and returns false.
func (f *Front) gather(w http.ResponseWriter, r *http.Request, ns []*store.Node, req func(*store.Node) *http.Request) ([]nodePage, bool) {
	pages := make([]nodePage, len(ns))
	errs := make([]*http.Response, len(ns))
	oks := make([]bool, len(ns))
	var wg sync.WaitGroup
	for i, n := range ns {
		wg.Go(func() { pages[i], errs[i], oks[i] = f.listOne(req(n), n) })
	}
	wg.Wait()
	for i := range ns {
		if errs[i] != nil {
			copyResponse(w, errs[i])
			return nil, false
		}
		if !oks[i] {
			f.fail(w, http.StatusBadGateway, "node "+ns[i].ID+" did not answer the list")
			return nil, false
		}
	}
	return pages, true
}

// listOne asks node n: its page, or its non-200 answer, or neither
// (unreachable or garbled: ok false).
func (f *Front) listOne(r *http.Request, n *store.Node) (p nodePage, bad *http.Response, ok bool) {
	resp, err := f.send(f.tr, r, n, nil)
	if err != nil {
		return p, nil, false
	}
	if resp.StatusCode != http.StatusOK {
		return p, resp, false
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&p.items); err != nil {
		return p, nil, false
	}
	p.hdr = resp.Header
	return p, nil, true
}
