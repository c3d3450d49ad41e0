package front

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/sbx-dev/sbx/internal/store"
)

// list answers GET /sandboxes and /v2/sandboxes with the sandboxes of
// every live node: the request (its key, filters) is made to each, the
// arrays joined. A node that fails fails the list (a partial list would
// read as sandboxes gone). Pagination across nodes is not supported: each
// node's page is joined as is.
func (f *Front) list(w http.ResponseWriter, r *http.Request) {
	ns := f.live(r.Context(), nil)
	parts := make([][]json.RawMessage, len(ns))
	errs := make([]*http.Response, len(ns))
	var wg sync.WaitGroup
	for i, n := range ns {
		wg.Go(func() { parts[i], errs[i] = f.listOne(r, n) })
	}
	wg.Wait()
	all := []json.RawMessage{}
	for i := range ns {
		if errs[i] != nil {
			copyResponse(w, errs[i])
			return
		}
		if parts[i] == nil {
			f.fail(w, http.StatusBadGateway, "node "+ns[i].ID+" did not answer the list")
			return
		}
		all = append(all, parts[i]...)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(all)
}

// listOne asks node n: its sandboxes, or its non-200 answer, or neither
// (unreachable or garbled).
func (f *Front) listOne(r *http.Request, n *store.Node) ([]json.RawMessage, *http.Response) {
	resp, err := f.send(f.tr, r, n, nil)
	if err != nil {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp
	}
	defer resp.Body.Close()
	var out []json.RawMessage
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&out); err != nil {
		return nil, nil
	}
	return out, nil
}
