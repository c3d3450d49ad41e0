package front

import (
	"context"
	"net/http"
	"slices"

	"github.com/sbx-dev/sbx/internal/store"
)

// Paused sandboxes and snapshots on shared storage (sbx serve
// --shared-dir) are not tied to one node. A request about a paused sandbox
// whose node holds no live lease (dead, or stopped) is sent to a live node
// with the same storage, the sandbox's runtime and its template, placed
// like a create; that node takes the sandbox over (sandbox.AdoptMoved,
// fenced in the store) and serves the request — a resume restores it
// there. A create naming a snapshot on shared storage goes to such a node
// too. The store, not the front, decides who owns a sandbox: two fronts
// sending the same sandbox to two nodes at once get one taker.

// toMoved forwards r about paused sandbox id, whose node is not live, to a
// node that can take it over. It reports false (nothing written) when the
// sandbox cannot move (its image is on its node's own disk).
func (f *Front) toMoved(w http.ResponseWriter, r *http.Request, id string) bool {
	rec, err := f.dir.Movable(r.Context(), id)
	if err != nil {
		return false
	}
	req := createReq{TemplateID: rec.TemplateID, Runtime: rec.Runtime, MemoryMB: rec.MemoryMB}
	cands := onStorage(candidates(f.live(r.Context(), nil), req), rec.Persist.Storage)
	if len(cands) == 0 {
		f.fail(w, http.StatusServiceUnavailable, "no live node can resume sandbox "+id+
			" (runtime "+rec.Runtime+", template "+rec.TemplateID+", its shared storage)")
		return true
	}
	n := f.pick(cands, req)
	f.log.Info("sandbox's node is gone; sending it to a node with its shared storage", "sandbox", id, "node", n.ID)
	f.forward(w, r, n)
	return true
}

// createCandidates are the nodes a create may go to: those that can run
// req, and, when req names no template a node has but a snapshot on
// shared storage, those with that storage, the snapshot's runtime and
// template.
func (f *Front) createCandidates(ctx context.Context, req createReq) []*store.Node {
	ns := f.live(ctx, nil)
	if req.TemplateID == "" || slices.ContainsFunc(ns, func(n *store.Node) bool { return slices.Contains(n.Templates, req.TemplateID) }) {
		return candidates(ns, req)
	}
	snap, err := f.dir.SharedSnapshot(ctx, req.TemplateID)
	if err != nil {
		return candidates(ns, req)
	}
	req.TemplateID, req.Runtime = snap.TemplateID, snap.Runtime
	return onStorage(candidates(ns, req), snap.Storage)
}

// onStorage keeps the nodes that report shared storage id.
func onStorage(ns []*store.Node, id string) []*store.Node {
	return slices.DeleteFunc(ns, func(n *store.Node) bool { return id == "" || n.Storage != id })
}
