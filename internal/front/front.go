// Package front is the stateless API front of a cluster (`sbx serve --role
// api`): it serves the E2B API and sandbox traffic on one origin and
// forwards each request to a node daemon. Creates are placed (place.go);
// anything naming a sandbox — its API path, the E2b-Sandbox-Id header or a
// <port>-<id>.<domain> Host — goes to the node the shared store records as
// its owner; lists are gathered from every live node (list.go); /mcp and
// /dashboard, whose sessions live in one node's memory, go to a node
// chosen by rendezvous hashing (sticky.go). The front
// authenticates nothing itself: the node it forwards to checks the
// client's key or token exactly as when called directly. Routing uses only
// the sandbox id and the store, never a client-chosen node.
package front

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/cluster"
	"github.com/sbx-dev/sbx/internal/fdlimit"
	"github.com/sbx-dev/sbx/internal/proxy"
	"github.com/sbx-dev/sbx/internal/store"
)

// Directory is what the front reads from the shared store.
type Directory interface {
	Nodes(ctx context.Context) ([]*store.Node, error)
	SandboxOwner(ctx context.Context, id string) (node, state string, err error)
	// Movable is the record of a paused sandbox on shared storage whose
	// node holds no live lease (store.ErrNotFound otherwise); SnapshotHome
	// a team's snapshot by id or name and the node that made it; KeyTeam
	// the team of an API key by its hex SHA-256 ("" for none). See moved.go.
	Movable(ctx context.Context, id string) (*store.Sandbox, error)
	SnapshotHome(ctx context.Context, team, key string) (*store.Snapshot, string, error)
	KeyTeam(ctx context.Context, hash string) (string, error)
}

// ErrorWriter writes an error answer ({code, message}).
type ErrorWriter func(w http.ResponseWriter, status int, msg string)

// Front forwards requests to the nodes of a cluster. It is safe for
// concurrent use.
type Front struct {
	// Sign, if set before use, signs every request forwarded to a node
	// (nodes given the cluster secret answer nothing else).
	Sign *cluster.Signer
	// BodyTimeout bounds reading a create's body, which the front reads
	// whole to place it (0: DefaultBodyTimeout).
	BodyTimeout time.Duration

	dir    Directory
	domain string
	fail   ErrorWriter
	log    *slog.Logger
	tr     *http.Transport  // pooled: forwards
	once   *http.Transport  // one connection per request: creates (place.go)
	open   *fdlimit.Counter // requests in flight (ServeHTTP): InFlight, or SetInFlight

	mu      sync.Mutex // guards nodes, nodesAt, proxies, pending and owners
	nodes   []*store.Node
	nodesAt time.Time
	proxies map[string]*httputil.ReverseProxy // by node id and address
	pending map[string]*pending               // by node id (place.go)
	owners  map[string]owner                  // sandbox id -> its node (toOwner)
}

// nodesTTL bounds how stale the front's view of the registry may be.
const nodesTTL = 500 * time.Millisecond

// New returns a front over dir; domain as for the node proxy ("" = any).
func New(dir Directory, domain string, fail ErrorWriter, log *slog.Logger) *Front {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	once := http.DefaultTransport.(*http.Transport).Clone()
	once.DisableKeepAlives = true
	return &Front{dir: dir, domain: domain, fail: fail, log: log, tr: tr, once: once, open: fdlimit.NewCounter(fdlimit.Limits{Total: InFlight()}),
		proxies: map[string]*httputil.ReverseProxy{},
		pending: map[string]*pending{}, owners: map[string]owner{}}
}

// SetInFlight sets the bound of requests forwarded at once (tests); call
// before serving.
func (f *Front) SetInFlight(n int) { f.open = fdlimit.NewCounter(fdlimit.Limits{Total: n}) }

// ServeHTTP routes r to a node, within the bound of requests in flight.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, traffic, err := proxy.Route(r, f.domain)
	if !traffic && err == nil && r.URL.Path == "/health" {
		w.WriteHeader(http.StatusOK) // the front's own: never refused
		return
	}
	release, ok := f.open.Admit("", "")
	if !ok {
		proxy.TooMany(w, proxy.ErrorWriter(f.fail), "too many requests in flight through this front; close some and retry")
		return
	}
	defer release()
	f.route(w, r, t, traffic || err != nil, err)
}

// InFlight bounds the requests a front forwards at once by default: each
// holds a connection to its node besides the client's, and the client
// connections may take half the descriptor limit (the daemon's listener
// bound), so a quarter leaves a quarter for the nodes' idle connections and
// the store. Before, 512 requests held through a front limited to 1024
// descriptors (a node waiting for their bodies) took it to EMFILE.
func InFlight() int { return max(fdlimit.Descriptors()/4, 16) }

// route routes r to a node: as sandbox traffic to t when traffic (err: its
// routing headers are malformed), else by its API path.
func (f *Front) route(w http.ResponseWriter, r *http.Request, t proxy.Target, traffic bool, err error) {
	if traffic {
		if err != nil {
			f.fail(w, http.StatusBadRequest, err.Error())
			return
		}
		f.toOwner(w, r, t.ID, true)
		return
	}
	if key, ok := sticky(r); ok {
		f.toSticky(w, r, key)
		return
	}
	switch p := strings.TrimPrefix(r.URL.Path, "/v2"); {
	case r.Method == http.MethodPost && p == "/sandboxes":
		f.create(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/v2/sandboxes":
		f.listV2(w, r)
	case r.Method == http.MethodGet && p == "/sandboxes":
		f.list(w, r)
	case r.Method == http.MethodGet && p == "/snapshots":
		f.listSnapshots(w, r)
	case r.Method == http.MethodDelete && strings.HasPrefix(p, "/templates/"):
		f.toSnapshotHome(w, r, strings.TrimPrefix(p, "/templates/"))
	case strings.HasPrefix(p, "/sandboxes/") && p != "/sandboxes/metrics":
		id, _, _ := strings.Cut(strings.TrimPrefix(p, "/sandboxes/"), "/")
		f.toOwner(w, r, id, false)
	default:
		f.toAny(w, r)
	}
}

// toOwner forwards r to the node recording sandbox id. A sandbox that is
// gone (ended, or lost with its node) or never recorded answers as on a
// node: 404 to the API, E2B's 502 "The sandbox was not found" to its
// traffic (the SDK's isRunning reads it).
func (f *Front) toOwner(w http.ResponseWriter, r *http.Request, id string, traffic bool) {
	if n := f.cachedOwner(r.Context(), id); n != nil {
		f.forward(w, r, n)
		return
	}
	// A paused sandbox whose node is gone may be claimed by a live node
	// (shared storage) between the owner lookup and the move: then it is
	// not movable any more, and a second lookup finds its new node.
	for attempt := 0; ; attempt++ {
		node, state, ok := f.lookupOwner(w, r, id, traffic)
		if !ok {
			return
		}
		n := f.live(r.Context(), func(n *store.Node) bool { return n.ID == node })
		if len(n) > 0 {
			f.remember(id, n[0])
			f.forward(w, r, n[0])
			return
		}
		if state == string(store.StatePaused) && f.toMoved(w, r, id) {
			return
		}
		if attempt > 0 || state != string(store.StatePaused) {
			f.fail(w, http.StatusBadGateway, fmt.Sprintf("sandbox %q: its node is not reachable", id))
			return
		}
	}
}

// lookupOwner asks the store for sandbox id's node and state; when it has
// answered r itself (gone, unknown, store down) ok is false.
func (f *Front) lookupOwner(w http.ResponseWriter, r *http.Request, id string, traffic bool) (node, state string, ok bool) {
	node, state, err := f.dir.SandboxOwner(r.Context(), id)
	gone := err == nil && (state == string(store.StateLost) || state == store.StateEnded)
	switch {
	case traffic && (gone || errors.Is(err, store.ErrNotFound)):
		proxy.WriteSandboxNotFound(w, r, id) // as a node's proxy answers, E2B's 502
	case errors.Is(err, store.ErrNotFound) || gone:
		f.fail(w, http.StatusNotFound, fmt.Sprintf("sandbox %q not found", id))
	case err != nil:
		f.fail(w, http.StatusServiceUnavailable, "cluster store: "+err.Error())
	default:
		return node, state, true
	}
	return "", "", false
}

// owner is a node a sandbox was routed to, with the node's fencing token
// then: a sandbox moves (moved.go) only off a node whose lease is gone, so
// while the node holds that same lease it still has the sandbox.
type owner struct {
	node  string
	token int64
}

// maxOwners bounds the owner cache; past it the cache starts over.
const maxOwners = 100_000

// cachedOwner is the live node a sandbox was last routed to, if it still
// holds the lease it had then. A sandbox stays on its node while that
// lease lasts; once it ends, that node answers for it (404, or 502 to
// traffic) as it would directly. A node no longer live, or live again
// with a new lease (a paused sandbox may have moved meanwhile), is not
// returned, so the store decides (a lost sandbox is 404).
func (f *Front) cachedOwner(ctx context.Context, id string) *store.Node {
	f.mu.Lock()
	o, ok := f.owners[id]
	f.mu.Unlock()
	if !ok {
		return nil
	}
	if n := f.live(ctx, func(n *store.Node) bool { return n.ID == o.node && n.Token == o.token }); len(n) > 0 {
		return n[0]
	}
	return nil
}

func (f *Front) remember(id string, n *store.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.owners) >= maxOwners {
		f.owners = map[string]owner{}
	}
	f.owners[id] = owner{node: n.ID, token: n.Token}
}

// toAny forwards r (not about one sandbox: templates, teams, volumes ...)
// to a live node; the state they read is shared.
func (f *Front) toAny(w http.ResponseWriter, r *http.Request) {
	ns := f.live(r.Context(), nil)
	if len(ns) == 0 {
		f.fail(w, http.StatusServiceUnavailable, "no live node in the cluster")
		return
	}
	f.forward(w, r, ns[int(time.Now().UnixNano()%int64(len(ns)))])
}

// forward reverse-proxies r to node n, streaming both ways.
func (f *Front) forward(w http.ResponseWriter, r *http.Request, n *store.Node) {
	f.mu.Lock()
	key := n.ID + " " + n.Address // a proxy signs for its node: an address another node reuses gets its own
	rp, ok := f.proxies[key]
	if !ok {
		u, err := url.Parse(n.Address)
		if err != nil {
			f.mu.Unlock()
			f.fail(w, http.StatusBadGateway, "node address: "+err.Error())
			return
		}
		rp = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.Out.Host = pr.In.Host
				f.sign(pr.Out, n)
			},
			Transport:     f.tr,
			FlushInterval: -1,
			ErrorLog:      slog.NewLogLogger(f.log.Handler(), slog.LevelDebug), // streams a client ended
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				f.log.Warn("forward to node", "node", n.ID, "err", err)
				f.fail(w, http.StatusBadGateway, "node "+n.ID+" did not answer")
			},
		}
		f.proxies[key] = rp
	}
	f.mu.Unlock()
	_ = http.NewResponseController(w).EnableFullDuplex() // as the node's own proxy: streams both ways
	out := r.Clone(r.Context())
	defer proxy.DetachBody(w, r, out)()
	rp.ServeHTTP(w, out)
}

// sign signs r for node n (with a signer), with the client address
// r.RemoteAddr holds, replacing any such headers a client sent.
func (f *Front) sign(r *http.Request, n *store.Node) {
	if f.Sign != nil {
		f.Sign.Sign(r, n.ID)
	}
}

// live returns the nodes the registry holds live (ExpireNodes, run by
// every node's heartbeat, judges leases by the database clock) that keep
// allows (nil: all), from a view at most nodesTTL old.
func (f *Front) live(ctx context.Context, keep func(*store.Node) bool) []*store.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.nodesAt) > nodesTTL {
		ns, err := f.dir.Nodes(ctx)
		if err != nil {
			f.log.Warn("list nodes", "err", err)
		} else {
			f.nodes, f.nodesAt = ns, time.Now()
		}
	}
	var out []*store.Node
	for _, n := range f.nodes {
		if n.State == "live" && (keep == nil || keep(n)) {
			out = append(out, n)
		}
	}
	return out
}
