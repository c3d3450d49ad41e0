package front

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/cluster"
	"github.com/sbx-dev/sbx/internal/store"
)

// fakeDir is a registry and ownership table; the real ones are the store's
// (conformance-tested) and the cluster integration test runs the front
// against real nodes.
type fakeDir struct {
	nodes    []*store.Node
	owners   map[string][2]string // id -> node, state
	lookups  int                  // SandboxOwner calls
	movable  map[string]*store.Sandbox
	snaps    map[string]*store.Snapshot
	snapHome string // the node of every snapshot in snaps
	// teamSnaps are other teams' snapshots (team -> key -> home node), and
	// keyTeams the teams of API keys by their hex SHA-256.
	teamSnaps map[string]map[string]string
	keyTeams  map[string]string
	claim     func() // if set, runs in Movable before it answers (a node claiming meanwhile)
}

func (d *fakeDir) Movable(_ context.Context, id string) (*store.Sandbox, error) {
	if d.claim != nil {
		d.claim()
	}
	if r, ok := d.movable[id]; ok {
		return r, nil
	}
	return nil, store.ErrNotFound
}

func (d *fakeDir) KeyTeam(_ context.Context, hash string) (string, error) {
	return d.keyTeams[hash], nil
}

func (d *fakeDir) SnapshotHome(_ context.Context, team, key string) (*store.Snapshot, string, error) {
	if team != "" {
		if home, ok := d.teamSnaps[team][key]; ok {
			return &store.Snapshot{ID: "snap-" + team, Team: team, TemplateID: "base", Runtime: "crun"}, home, nil
		}
		return nil, "", store.ErrNotFound
	}
	if s, ok := d.snaps[key]; ok {
		return s, d.snapHome, nil
	}
	return nil, "", store.ErrNotFound
}

func (d *fakeDir) Nodes(context.Context) ([]*store.Node, error) { return d.nodes, nil }

func (d *fakeDir) SandboxOwner(_ context.Context, id string) (string, string, error) {
	d.lookups++
	o, ok := d.owners[id]
	if !ok {
		return "", "", store.ErrNotFound
	}
	return o[0], o[1], nil
}

// fakeNode answers every request with its name and the path; lists with one
// sandbox named after it.
func fakeNode(t *testing.T, name string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/sandboxes" {
			fmt.Fprintf(w, `[{"sandboxID":"%s-sb"}]`, name)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/snapshots" { // one shared, one its own
			fmt.Fprintf(w, `[{"snapshotID":"shared"},{"snapshotID":"%s-own"}]`, name)
			return
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s key=%s", name, r.URL.Path, b, r.Header.Get("X-API-Key"))
	}))
	t.Cleanup(s.Close)
	return s
}

func node(id, addr string, usedMB int) *store.Node {
	return &store.Node{ID: id, Address: addr, State: "live", Runtimes: []string{"crun"}, Templates: []string{"base"},
		Capacity: store.Capacity{CPU: 4, MemoryMB: 8192, Sandboxes: 10}, Used: store.Capacity{MemoryMB: usedMB}, HeartbeatAt: time.Now()}
}

func newFront(d *fakeDir) *Front {
	fail := func(w http.ResponseWriter, status int, msg string) { http.Error(w, msg, status) }
	return New(d, "", fail, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func do(t *testing.T, f *Front, method, path, body string, hdr ...string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("X-API-Key", "k")
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// two valid sandbox ids
const idA, idB = "aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb"

func TestFrontRoutesByOwner(t *testing.T) {
	a, b := fakeNode(t, "a"), fakeNode(t, "b")
	d := &fakeDir{nodes: []*store.Node{node("a", a.URL, 0), node("b", b.URL, 0)},
		owners: map[string][2]string{idA: {"a", "running"}, idB: {"b", "running"}, "gone": {"a", string(store.StateLost)}, "ended": {"b", store.StateEnded},
			"gonegonegonegonegone": {"a", string(store.StateLost)}}}
	f := newFront(d)
	for _, c := range []struct {
		method, path string
		hdr          []string
		code         int
		prefix       string
	}{
		{"GET", "/sandboxes/" + idB, nil, 200, "b /sandboxes/" + idB},
		{"POST", "/sandboxes/" + idA + "/pause", nil, 200, "a /sandboxes/" + idA + "/pause"},
		{"GET", "/v2/sandboxes/" + idB + "/logs", nil, 200, "b /v2/sandboxes/" + idB + "/logs"},
		{"POST", "/process.Process/Start", []string{"E2b-Sandbox-Id", idA}, 200, "a /process.Process/Start"},
		{"GET", "/files", []string{"E2b-Sandbox-Id", idB, "X-Sbx-Node", "a"}, 200, "b /files"}, // a client's node header is not a route
		{"GET", "/sandboxes/gone", nil, 404, ""},
		{"GET", "/sandboxes/ended", nil, 404, ""},
		{"GET", "/health", []string{"E2b-Sandbox-Id", "gonegonegonegonegone"}, 502, ""}, // isRunning: false
		{"GET", "/health", []string{"E2b-Sandbox-Id", "cccccccccccccccccccc"}, 502, ""}, // never made: as E2B, 502 too
		{"GET", "/sandboxes/nosuch", nil, 404, ""},
		{"POST", "/process.Process/Start", []string{"E2b-Sandbox-Id", "../x"}, 400, ""},
	} {
		code, body := do(t, f, c.method, c.path, "", c.hdr...)
		if code != c.code || !strings.HasPrefix(body, c.prefix) {
			t.Errorf("%s %s %v = %d %q, want %d %q", c.method, c.path, c.hdr, code, body, c.code, c.prefix)
		}
	}
	d.nodes[1].State = "expired"
	f.nodesAt = time.Time{}
	if code, _ := do(t, f, "GET", "/sandboxes/"+idB, ""); code != http.StatusBadGateway {
		t.Errorf("a sandbox whose node is not live: %d, want 502", code)
	}
}

func TestFrontPlacesAndLists(t *testing.T) {
	a, b := fakeNode(t, "a"), fakeNode(t, "b")
	d := &fakeDir{nodes: []*store.Node{node("a", a.URL, 0), node("b", b.URL, 0)}}
	f := newFront(d)
	got := map[string]int{}
	for range 10 {
		code, body := do(t, f, "POST", "/sandboxes", `{"templateID":"base"}`)
		if code != 200 || !strings.Contains(body, `{"templateID":"base"} key=k`) {
			t.Fatalf("create = %d %q", code, body)
		}
		got[body[:1]]++
	}
	if got["a"] != 5 || got["b"] != 5 {
		t.Errorf("10 creates on two equal nodes placed %v, want 5 and 5", got)
	}
	code, body := do(t, f, "GET", "/sandboxes", "")
	var list []map[string]string
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 2 {
		t.Errorf("list = %d %q, want both nodes' sandboxes", code, body)
	}
	a.Close() // a refuses connections: creates go to b, never fail
	for range 4 {
		if code, body := do(t, f, "POST", "/sandboxes", `{}`); code != 200 || body[:1] != "b" {
			t.Fatalf("create with a down = %d %q", code, body)
		}
	}
	if code, _ := do(t, f, "POST", "/sandboxes", `{"runtime":"runsc"}`); code != http.StatusServiceUnavailable {
		t.Errorf("create for a runtime no node has = %d, want 503", code)
	}
}

func TestCandidates(t *testing.T) {
	full := node("full", "", 0)
	full.Used.Sandboxes = 10
	other := node("other", "", 0)
	other.Templates, other.Runtimes = []string{"code-interpreter-v1"}, []string{"runsc"}
	ns := []*store.Node{node("a", "", 0), full, other}
	for _, c := range []struct {
		req  createReq
		want string
	}{
		{createReq{TemplateID: "base"}, "a"},
		{createReq{}, "a"}, // no template: base
		{createReq{TemplateID: "code-interpreter-v1"}, "other"},
		{createReq{TemplateID: "my-own"}, "a,other"}, // in no report: anywhere with room
		{createReq{TemplateID: "my-own", Runtime: "runsc"}, "other"},
		{createReq{TemplateID: "base", Runtime: "runsc"}, ""},
	} {
		var ids []string
		for _, n := range candidates(ns, c.req) {
			ids = append(ids, n.ID)
		}
		if strings.Join(ids, ",") != c.want {
			t.Errorf("candidates(%+v) = %v, want %s", c.req, ids, c.want)
		}
	}
}

// TestFrontSigns: with a signer every forwarded request carries a
// signature for its target node, whatever a client sent in the header.
func TestFrontSigns(t *testing.T) {
	key := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := cluster.LoadSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	var clients []string // the client address of each verified request
	verifying := func(id string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := s.Verify(r, id); err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			c, _ := cluster.Client(r)
			clients = append(clients, c.String())
			fmt.Fprint(w, id)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	a := verifying("a")
	d := &fakeDir{nodes: []*store.Node{node("a", a.URL, 0)}, owners: map[string][2]string{idA: {"a", "running"}}}
	f := newFront(d)
	f.Sign = s
	for _, c := range []struct{ method, path string }{
		{"POST", "/sandboxes"}, {"GET", "/sandboxes/" + idA}, {"GET", "/templates"},
	} {
		if code, body := do(t, f, c.method, c.path, "{}", cluster.AuthHeader, "v1.1.forged", cluster.ClientHeader, "10.9.9.9"); code != 200 || body != "a" {
			t.Errorf("%s %s through a signing front = %d %q", c.method, c.path, code, body)
		}
	}
	do(t, f, "GET", "/sandboxes", "") // the listing: the front's own requests to each node
	if want := strings.Repeat("192.0.2.1 ", 4); strings.Join(clients, " ")+" " != want {
		t.Errorf("client addresses the node verified: %q, want the client's (httptest's 192.0.2.1) on each of 4", clients)
	}
	f.Sign = nil
	if code, _ := do(t, f, "GET", "/templates", ""); code != http.StatusUnauthorized {
		t.Errorf("unsigned forward to a node that requires signatures = %d, want 401", code)
	}
}

// TestFrontCachesOwners: a sandbox's node is looked up once while the node
// is live; a node that is no longer live sends the front back to the store.
func TestFrontCachesOwners(t *testing.T) {
	a := fakeNode(t, "a")
	d := &fakeDir{nodes: []*store.Node{node("a", a.URL, 0)}, owners: map[string][2]string{idA: {"a", "running"}}}
	f := newFront(d)
	for range 3 {
		if code, _ := do(t, f, "GET", "/sandboxes/"+idA, ""); code != 200 {
			t.Fatalf("GET = %d", code)
		}
	}
	if d.lookups != 1 {
		t.Fatalf("%d owner lookups for 3 requests, want 1", d.lookups)
	}
	d.nodes[0].State = "expired"
	d.owners[idA] = [2]string{"a", string(store.StateLost)}
	f.nodesAt = time.Time{}
	if code, _ := do(t, f, "GET", "/sandboxes/"+idA, ""); code != 404 || d.lookups != 2 {
		t.Fatalf("after its node was lost: %d with %d lookups, want 404 from the store", code, d.lookups)
	}
}

// TestCandidatesCachedUserTemplate: a user template, held by some node or
// none, may run on any node with room (pick prefers the holders).
func TestCandidatesCachedUserTemplate(t *testing.T) {
	holder, puller, plain := node("holder", "", 0), node("puller", "", 0), node("plain", "", 0)
	holder.Cached, puller.Pulls = []string{"tpl123", "my-own"}, true
	ns := []*store.Node{holder, puller, plain}
	for _, c := range []struct {
		tmpl, want string
	}{
		{"my-own", "holder,puller,plain"},
		{"tpl123", "holder,puller,plain"},
		{"not-held", "holder,puller,plain"},
		{"base", "holder,puller,plain"},
	} {
		var ids []string
		for _, n := range candidates(ns, createReq{TemplateID: c.tmpl}) {
			ids = append(ids, n.ID)
		}
		if strings.Join(ids, ",") != c.want {
			t.Errorf("candidates(%s) = %v, want %s", c.tmpl, ids, c.want)
		}
	}
}

// TestPickPrefersCachedTemplate: between two nodes, the one holding the
// user template's layers wins unless the other has cachedBonusMB more room.
func TestPickPrefersCachedTemplate(t *testing.T) {
	for _, c := range []struct {
		name       string
		holderUsed int
		wantID     string
	}{
		{"equal room", 0, "holder"},
		{"holder somewhat fuller", cachedBonusMB - 512, "holder"},
		{"holder much fuller", cachedBonusMB + 512, "other"},
	} {
		t.Run(c.name, func(t *testing.T) {
			holder, other := node("holder", "", c.holderUsed), node("other", "", 0)
			holder.Cached = []string{"my-own"}
			for range 5 { // K = 2 of 2: both always compared
				f := newFront(&fakeDir{})
				if got := f.pick([]*store.Node{holder, other}, createReq{TemplateID: "my-own"}); got.ID != c.wantID {
					t.Fatalf("pick = %s, want %s", got.ID, c.wantID)
				}
			}
		})
	}
}

// TestPickPrefersWarmPool: a node with a ready pooled sandbox of the
// create's template and runtime (its default one when the create names
// none) wins over a freer node without, until this front's creates have
// taken its warm sandboxes.
func TestPickPrefersWarmPool(t *testing.T) {
	warm, other := node("warm", "", 2048), node("other", "", 0)
	warm.DefaultRuntime, warm.Warm = "runsc", map[string]int{"base:runsc": 2}
	f := newFront(&fakeDir{})
	for i, want := range []string{"warm", "warm", "other"} {
		if got := f.pick([]*store.Node{warm, other}, createReq{TemplateID: "base"}); got.ID != want {
			t.Fatalf("create %d: pick = %s, want %s", i+1, got.ID, want)
		}
	}
	f = newFront(&fakeDir{})
	for _, req := range []createReq{{TemplateID: "base", Runtime: "crun"}, {TemplateID: "code-interpreter-v1"}} {
		if got := f.pick([]*store.Node{warm, other}, req); got.ID != "other" {
			t.Errorf("%+v: pick = %s, want other (no warm sandbox of it)", req, got.ID)
		}
	}
}
