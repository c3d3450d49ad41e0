package front

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// TestFrontMovesPaused: a paused sandbox whose node is gone goes to a live
// node with its shared storage and runtime (never to one without), one
// that cannot move is 502 as before, and a cached owner that came back
// with a new lease is asked of the store again.
func TestFrontMovesPaused(t *testing.T) {
	a, b, c := fakeNode(t, "a"), fakeNode(t, "b"), fakeNode(t, "c")
	na, nb, nc := node("a", a.URL, 0), node("b", b.URL, 0), node("c", c.URL, 0)
	na.Storage, nb.Storage, nc.Runtimes = "st", "st", []string{"runsc"} // c: the runtime, not the storage
	nb.Runtimes, na.Runtimes = []string{"runsc"}, []string{"runsc"}
	na.Token, nb.Token, nc.Token = 1, 2, 3
	d := &fakeDir{nodes: []*store.Node{na, nb, nc},
		owners: map[string][2]string{idA: {"a", "paused"}, idB: {"a", "paused"}},
		movable: map[string]*store.Sandbox{idA: {ID: idA, TemplateID: "base", Runtime: "runsc",
			Persist: store.Persistence{Storage: "st"}}}}
	f := newFront(d)
	if code, body := do(t, f, "GET", "/sandboxes/"+idA, ""); code != 200 || !strings.HasPrefix(body, "a ") {
		t.Fatalf("paused sandbox on a live node: %d %q", code, body)
	}
	na.State, f.nodesAt = "expired", time.Time{}
	for range 5 {
		if code, body := do(t, f, "POST", "/sandboxes/"+idA+"/connect", ""); code != 200 || !strings.HasPrefix(body, "b /sandboxes/"+idA+"/connect") {
			t.Fatalf("resume of a paused sandbox whose node is gone: %d %q, want it sent to b", code, body)
		}
	}
	if code, _ := do(t, f, "GET", "/sandboxes/"+idB, ""); code != http.StatusBadGateway {
		t.Fatalf("paused on its node's own disk, node gone: %d, want 502", code)
	}
	nb.Runtimes, f.nodesAt = []string{"crun"}, time.Time{}
	if code, _ := do(t, f, "POST", "/sandboxes/"+idA+"/connect", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("no node with the storage and runtime: %d, want 503", code)
	}
	// a moved sandbox: cached on b; b comes back with a new lease and the
	// sandbox is c's by then: the store is asked again.
	nb.Runtimes, nc.Storage, f.nodesAt = []string{"runsc"}, "st", time.Time{}
	d.owners[idA] = [2]string{"b", "running"}
	if code, body := do(t, f, "GET", "/sandboxes/"+idA, ""); code != 200 || !strings.HasPrefix(body, "b ") {
		t.Fatalf("after the move: %d %q", code, body)
	}
	d.owners[idA] = [2]string{"c", "running"}
	nb.Token, f.nodesAt = 4, time.Time{}
	if code, body := do(t, f, "GET", "/sandboxes/"+idA, ""); code != 200 || !strings.HasPrefix(body, "c ") {
		t.Fatalf("cached node back with a new lease: %d %q, want the store's owner c", code, body)
	}
}

// TestFrontMoveRace: a paused sandbox whose node is gone, claimed by a
// live node (shared storage) between the front's owner lookup and its move,
// goes to that node, not 502.
func TestFrontMoveRace(t *testing.T) {
	a, b := fakeNode(t, "a"), fakeNode(t, "b")
	na, nb := node("a", a.URL, 0), node("b", b.URL, 0)
	na.State = "expired"
	d := &fakeDir{nodes: []*store.Node{na, nb}, owners: map[string][2]string{idA: {"a", "paused"}}}
	d.claim = func() { d.owners[idA] = [2]string{"b", "paused"} } // b took it over: no longer movable
	f := newFront(d)
	if code, body := do(t, f, "POST", "/sandboxes/"+idA+"/connect", ""); code != 200 || !strings.HasPrefix(body, "b /sandboxes/"+idA+"/connect") {
		t.Fatalf("connect while a live node claims the sandbox: %d %q, want it sent to b", code, body)
	}
	if d.lookups != 2 {
		t.Fatalf("owner lookups %d, want 2 (one before the move, one after it failed)", d.lookups)
	}
}

// TestFrontSnapshots: a create from a snapshot goes to a node that has its
// image (on shared storage: any node with the storage and its runtime; on
// a node's disk: that node), so does its deletion; the list joins every
// node's, a shared snapshot once.
func TestFrontSnapshots(t *testing.T) {
	a, b, c := fakeNode(t, "a"), fakeNode(t, "b"), fakeNode(t, "c")
	na, nb, nc := node("a", a.URL, 0), node("b", b.URL, 0), node("c", c.URL, 0)
	nb.Storage, nb.Runtimes = "st", []string{"runsc", "crun"}
	d := &fakeDir{nodes: []*store.Node{na, nb, nc}, snapHome: "c",
		snaps: map[string]*store.Snapshot{"mysnap": {ID: "snap1", TemplateID: "base", Runtime: "runsc", Storage: "st"},
			"local": {ID: "snap2", TemplateID: "base", Runtime: "crun"}}}
	f := newFront(d)
	for range 6 {
		if code, body := do(t, f, "POST", "/sandboxes", `{"templateID":"mysnap"}`); code != 200 || !strings.HasPrefix(body, "b ") {
			t.Fatalf("create from a shared snapshot: %d %q, want b", code, body)
		}
		if code, body := do(t, f, "POST", "/sandboxes", `{"templateID":"local"}`); code != 200 || !strings.HasPrefix(body, "c ") {
			t.Fatalf("create from c's own snapshot: %d %q, want c", code, body)
		}
	}
	if code, body := do(t, f, "DELETE", "/templates/local", ""); code != 200 || !strings.HasPrefix(body, "c /templates/local") {
		t.Fatalf("delete of c's snapshot: %d %q", code, body)
	}
	if code, body := do(t, f, "DELETE", "/templates/mysnap", ""); code != 200 || !strings.HasPrefix(body, "b /templates/mysnap") {
		t.Fatalf("delete of the shared snapshot: %d %q", code, body)
	}
	code, body := do(t, f, "GET", "/snapshots", "")
	var got []map[string]string
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got) != 4 {
		t.Fatalf("snapshot list: %d %q, want shared once and each node's own", code, body)
	}
}

// TestFrontSnapshotNamesPerTeam: snapshot names are per team, so a create
// or delete naming one goes to the node of the caller's team's snapshot of
// that name (the team found by its key's hash), never to the node of
// another team's, newer or not.
func TestFrontSnapshotNamesPerTeam(t *testing.T) {
	a, b, c := fakeNode(t, "a"), fakeNode(t, "b"), fakeNode(t, "c")
	na, nb, nc := node("a", a.URL, 0), node("b", b.URL, 0), node("c", c.URL, 0)
	h := sha256.Sum256([]byte("team-b-key"))
	d := &fakeDir{nodes: []*store.Node{na, nb, nc}, snapHome: "c",
		snaps:     map[string]*store.Snapshot{"same": {ID: "snap1", TemplateID: "base", Runtime: "crun"}},
		teamSnaps: map[string]map[string]string{"tb": {"same": "b"}},
		keyTeams:  map[string]string{hex.EncodeToString(h[:]): "tb"}}
	f := newFront(d)
	for _, c := range []struct{ key, want string }{{"k", "c "}, {"team-b-key", "b "}} {
		if code, body := do(t, f, "POST", "/sandboxes", `{"templateID":"same"}`, "X-API-Key", c.key); code != 200 || !strings.HasPrefix(body, c.want) {
			t.Errorf("create from same with key %s: %d %q, want %s", c.key, code, body, c.want)
		}
		if code, body := do(t, f, "DELETE", "/templates/same", "", "Authorization", "Bearer "+c.key, "X-API-Key", ""); code != 200 || !strings.HasPrefix(body, c.want) {
			t.Errorf("delete of same with key %s: %d %q, want %s", c.key, code, body, c.want)
		}
	}
}
