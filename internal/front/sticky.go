package front

import (
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"strings"

	"github.com/sbx-dev/sbx/internal/store"
)

// Sessions a node keeps in its memory — an /mcp session (Mcp-Session-Id),
// a dashboard sign-in (its cookie) — are known only to the node that made
// them, so their requests must all reach that node. The front sends them
// to a node chosen by rendezvous hashing over the live nodes: /mcp by the
// caller's API key (each key's sessions on one node, keys spread over the
// nodes), /dashboard all to one node (its sessions are made before the
// front could tell them apart). The choice holds while the set of live
// nodes does; when a node leaves, only the sessions it held move (and end:
// the client starts a new one); when one joins, the keys it now wins do.
// The node still checks the key of every request as when called directly.

// sticky returns the key r's node is chosen by, and whether r is to a
// session the nodes keep in memory.
func sticky(r *http.Request) (string, bool) {
	switch p := r.URL.Path; {
	case p == "/mcp":
		return "mcp\n" + apiKey(r), true
	case p == "/dashboard" || strings.HasPrefix(p, "/dashboard/"):
		return "dashboard", true
	}
	return "", false
}

// apiKey is the key an /mcp request authenticates with, as the node reads
// it: X-API-Key, else an Authorization Bearer token.
func apiKey(r *http.Request) string {
	if k := r.Header.Get("X-API-Key"); k != "" {
		return k
	}
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return b
	}
	return ""
}

// toSticky forwards r to the live node that key hashes to.
func (f *Front) toSticky(w http.ResponseWriter, r *http.Request, key string) {
	n := rendezvous(f.live(r.Context(), nil), key)
	if n == nil {
		f.fail(w, http.StatusServiceUnavailable, "no live node in the cluster")
		return
	}
	f.forward(w, r, n)
}

// rendezvous is the node of ns with the highest hash of (key, node id)
// (nil for none): the same for a key while ns is, whatever their order.
func rendezvous(ns []*store.Node, key string) *store.Node {
	var best *store.Node
	var top uint64
	for _, n := range ns {
		s := sha256.Sum256([]byte(key + "\x00" + n.ID))
		if h := binary.BigEndian.Uint64(s[:8]); best == nil || h > top {
			best, top = n, h
		}
	}
	return best
}
