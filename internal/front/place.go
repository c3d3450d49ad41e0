package front

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// K is how many candidate nodes a placement samples ("best of K").
const K = 2

// maxCreateBody bounds a create request's body (it is read to place it).
const maxCreateBody = 1 << 20

// createReq is what placement reads of a create.
type createReq struct {
	TemplateID string `json:"templateID"`
	Runtime    string `json:"runtime"`
	MemoryMB   int    `json:"memoryMB"`
}

// create places a create on a node and forwards it there, on a connection
// of its own (a pooled one the node closed would fail after the request
// may have been sent). A node that refuses the connection is dropped and
// the next best tried: the create never reached it, so it cannot be
// half-made there. Any later failure is answered as is, never retried (the
// node may have made the sandbox).
func (f *Front) create(w http.ResponseWriter, r *http.Request) {
	body, err := f.readCreate(w, r)
	if err != nil || len(body) > maxCreateBody {
		f.fail(w, http.StatusBadRequest, "create request body unreadable or over 1 MiB")
		return
	}
	var req createReq
	_ = json.Unmarshal(body, &req) // a bad body is the node's to reject, with its message
	cands := f.createCandidates(r, req)
	for len(cands) > 0 {
		n := f.pick(cands, req)
		resp, err := f.send(f.once, r, n, body)
		if err == nil {
			copyResponse(w, resp)
			return
		}
		if !isDialError(err) {
			f.fail(w, http.StatusBadGateway, "node "+n.ID+" failed during the create: "+err.Error())
			return
		}
		f.log.Warn("node unreachable for a create; placing elsewhere", "node", n.ID, "err", err)
		cands = slices.DeleteFunc(cands, func(c *store.Node) bool { return c == n })
	}
	f.fail(w, http.StatusServiceUnavailable, "no live node can run this sandbox (template "+req.TemplateID+")")
}

// DefaultBodyTimeout is how long a create's body may take to arrive, as
// for the API's bodies on a node.
const DefaultBodyTimeout = 30 * time.Second

// readCreate reads a create's body (at most maxCreateBody+1 bytes) within
// the body timeout. The front reads it before any node (and any key check)
// sees it, and before, without a deadline: a client without a key held a
// connection and up to 1 MiB of the front's memory for as long as it
// trickled its body.
func (f *Front) readCreate(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	d := f.BodyTimeout
	if d <= 0 {
		d = DefaultBodyTimeout
	}
	_ = rc.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(io.LimitReader(r.Body, maxCreateBody+1))
	if err == nil && len(b) <= maxCreateBody { // kept past an error: the server then discards the rest of the body without waiting
		_ = rc.SetReadDeadline(time.Time{})
	}
	return b, err
}

// candidates are the nodes that can run req: its runtime available, room
// for one more sandbox, and — when any node reports the template present —
// the template present. User templates are not filtered (a node that has
// not yet loaded one's records reports nothing of it, yet may share the
// templates dir or pull its layers): pick prefers the nodes holding them.
func candidates(ns []*store.Node, req createReq) []*store.Node {
	tmpl := templateOf(req)
	anyHas := slices.ContainsFunc(ns, func(n *store.Node) bool { return slices.Contains(n.Templates, tmpl) })
	var out []*store.Node
	for _, n := range ns {
		switch {
		case req.Runtime != "" && !slices.Contains(n.Runtimes, req.Runtime):
		case n.Capacity.Sandboxes > 0 && n.Used.Sandboxes >= n.Capacity.Sandboxes:
		case anyHas && !slices.Contains(n.Templates, tmpl):
		default:
			out = append(out, n)
		}
	}
	return out
}

// templateOf is the template req names ("base" when none).
func templateOf(req createReq) string {
	if req.TemplateID == "" {
		return "base"
	}
	return req.TemplateID
}

// cachedBonusMB is what holding a user template's layers counts for in a
// placement, as free memory: a node that has them starts the sandbox
// without pulling, unless another has this much more room.
const cachedBonusMB = 2048

// warmBonusMB is what a ready sandbox in a node's warm pool for the create's
// template and runtime counts for, as free memory (the create is a claim,
// not a boot). Creates this front placed on the node since its report are
// taken as claims of its warm sandboxes.
const warmBonusMB = 4096

// pick samples K of ns at random and returns the one with the most free
// memory (a warm sandbox for req counts warmBonusMB more, a node holding
// req's user template cachedBonusMB more),
// then fewest sandboxes, and books req's memory on it. A node's
// report is as old as its last heartbeat, so what this front placed on it
// since is counted too (pending, cleared by a newer heartbeat); random
// sampling spreads what several fronts place at once.
func (f *Front) pick(ns []*store.Node, req createReq) *store.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	var best *store.Node
	tmpl := templateOf(req)
	for _, i := range rand.Perm(len(ns))[:min(K, len(ns))] {
		if n := ns[i]; best == nil || f.freerLocked(n, best, tmpl, req.Runtime) {
			best = n
		}
	}
	p := f.pendingLocked(best)
	p.memMB += max(req.MemoryMB, defaultMemoryMB)
	p.count++
	return best
}

// defaultMemoryMB is booked for a create that names no memory.
const defaultMemoryMB = 512

// pending is what this front placed on a node since its report at.
type pending struct {
	at           time.Time // the node's HeartbeatAt these are counted from
	memMB, count int
}

func (f *Front) pendingLocked(n *store.Node) *pending {
	p := f.pending[n.ID]
	if p == nil || n.HeartbeatAt.After(p.at) {
		p = &pending{at: n.HeartbeatAt}
		f.pending[n.ID] = p
	}
	return p
}

func (f *Front) freerLocked(a, b *store.Node, tmpl, rt string) bool {
	pa, pb := f.pendingLocked(a), f.pendingLocked(b)
	fa := a.Capacity.MemoryMB - a.Used.MemoryMB - pa.memMB + cachedBonus(a, tmpl) + warmBonus(a, pa, tmpl, rt)
	fb := b.Capacity.MemoryMB - b.Used.MemoryMB - pb.memMB + cachedBonus(b, tmpl) + warmBonus(b, pb, tmpl, rt)
	if fa != fb {
		return fa > fb
	}
	return a.Used.Sandboxes+pa.count < b.Used.Sandboxes+pb.count
}

func cachedBonus(n *store.Node, tmpl string) int {
	if slices.Contains(n.Cached, tmpl) {
		return cachedBonusMB
	}
	return 0
}

// warmBonus is warmBonusMB if n's report holds a ready pooled sandbox of
// tmpl on rt (its default runtime when rt is "") beyond what this front
// placed on it since.
func warmBonus(n *store.Node, p *pending, tmpl, rt string) int {
	if rt == "" {
		rt = n.DefaultRuntime
	}
	if n.Warm[tmpl+":"+rt] > p.count {
		return warmBonusMB
	}
	return 0
}

// send makes r, with body, to node n over tr.
func (f *Front) send(tr http.RoundTripper, r *http.Request, n *store.Node, body []byte) (*http.Response, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, n.Address+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	out.RemoteAddr = r.RemoteAddr // the client's, which sign passes on
	f.sign(out, n)
	return tr.RoundTrip(out)
}

func copyResponse(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// isDialError: the connection to the node was never made.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
