package front

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

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
// req; when req names no template a node has but a snapshot, those that
// have the snapshot's image (its node, or any node with its shared
// storage) with its runtime and template.
func (f *Front) createCandidates(r *http.Request, req createReq) []*store.Node {
	ns := f.live(r.Context(), nil)
	if req.TemplateID == "" || slices.ContainsFunc(ns, func(n *store.Node) bool { return slices.Contains(n.Templates, req.TemplateID) }) {
		return candidates(ns, req)
	}
	snap, home, err := f.snapshotHome(r, req.TemplateID)
	if err != nil {
		return candidates(ns, req)
	}
	req.TemplateID, req.Runtime = snap.TemplateID, snap.Runtime
	return withImage(candidates(ns, req), snap, home)
}

// withImage keeps the nodes that have snap's image: on shared storage,
// those that report it; else its home node.
func withImage(ns []*store.Node, snap *store.Snapshot, home string) []*store.Node {
	if snap.Storage != "" {
		return onStorage(ns, snap.Storage)
	}
	return slices.DeleteFunc(ns, func(n *store.Node) bool { return n.ID != home })
}

// toSnapshotHome sends DELETE /templates/{key} naming a snapshot to a node
// that has it (a node-local snapshot is its node's to delete); anything
// else (a template, an unknown key) goes to any node, as before.
func (f *Front) toSnapshotHome(w http.ResponseWriter, r *http.Request, key string) {
	snap, home, err := f.snapshotHome(r, key)
	if err != nil {
		f.toAny(w, r)
		return
	}
	ns := withImage(f.live(r.Context(), nil), snap, home)
	if len(ns) == 0 {
		f.fail(w, http.StatusBadGateway, "snapshot "+key+": no live node has it")
		return
	}
	f.forward(w, r, ns[0])
}

// snapshotHome is the snapshot key of r's team (its API key's: snapshot
// names are per team, and another team's newer one of the same name on
// another node must not take the request there) and its node. The key is
// only hashed to find its team for placement; the node still checks it.
func (f *Front) snapshotHome(r *http.Request, key string) (*store.Snapshot, string, error) {
	k := r.Header.Get("X-API-Key")
	if k == "" {
		k, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	h := sha256.Sum256([]byte(k))
	team, err := f.dir.KeyTeam(r.Context(), hex.EncodeToString(h[:]))
	if err != nil {
		return nil, "", err
	}
	return f.dir.SnapshotHome(r.Context(), team, key)
}

// listSnapshots answers GET /snapshots with every live node's list, joined
// (a snapshot on shared storage, listed by every node with it, once).
func (f *Front) listSnapshots(w http.ResponseWriter, r *http.Request) {
	ns := f.live(r.Context(), nil)
	pages, ok := f.gather(w, r, ns, func(*store.Node) *http.Request { return r })
	if !ok {
		return
	}
	all, seen := []json.RawMessage{}, map[string]bool{}
	for _, p := range pages {
		for _, raw := range p.items {
			var s struct {
				ID string `json:"snapshotID"`
			}
			if json.Unmarshal(raw, &s) == nil && !seen[s.ID] {
				seen[s.ID] = true
				all = append(all, raw)
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(all)
}

// onStorage keeps the nodes that report shared storage id.
func onStorage(ns []*store.Node, id string) []*store.Node {
	return slices.DeleteFunc(ns, func(n *store.Node) bool { return id == "" || n.Storage != id })
}
