package egress

import (
	"container/list"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Resolution cache defaults (see Resolutions).
const (
	DefaultMinTTL        = time.Minute
	DefaultMaxTTL        = time.Hour
	DefaultMaxPerSandbox = 4096
)

// Resolutions remembers, per sandbox, which addresses the DNS filter gave it
// for which name, until the answer's TTL (clamped to [MinTTL, MaxTTL])
// expires. Each sandbox holds at most MaxPerSandbox (name, address) pairs;
// adding one more evicts the least recently added. Add has the signature of
// dnsfilter.Filter.Resolved and Has the one of guard.Guard.Resolved, so one Resolutions
// joins the two. Safe for concurrent use; the zero value is ready, with the
// defaults above.
type Resolutions struct {
	MinTTL        time.Duration // floor for a TTL (DefaultMinTTL when 0)
	MaxTTL        time.Duration // ceiling for a TTL (DefaultMaxTTL when 0)
	MaxPerSandbox int           // entries per sandbox (DefaultMaxPerSandbox when 0)

	now func() time.Time // time.Now unless a test sets it

	mu    sync.Mutex              // guards boxes and everything in it
	boxes map[string]*resolvedBox // sandbox id → its entries
}

// resolvedBox is one sandbox's cache: an index and an insertion order.
type resolvedBox struct {
	index map[resolvedKey]*list.Element // of *resolvedEntry
	order list.List                     // oldest first
}

type resolvedKey struct {
	name string
	addr netip.Addr
}

type resolvedEntry struct {
	key     resolvedKey
	expires time.Time
}

// Add records that name resolved to addrs for sandbox, for ttl. Re-adding a
// pair refreshes its expiry and makes it the newest.
func (r *Resolutions) Add(sandbox, name string, addrs []netip.Addr, ttl time.Duration) {
	name = NormName(name)
	now := r.clock()
	exp := now.Add(r.clamp(ttl))
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.box(sandbox)
	b.pruneOldest(now)
	for _, a := range addrs {
		r.put(b, resolvedKey{name, a.Unmap()}, exp)
	}
}

// Has reports whether ip is an unexpired answer for name given to sandbox.
func (r *Resolutions) Has(sandbox, name string, ip netip.Addr) bool {
	k := resolvedKey{NormName(name), ip.Unmap()}
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.boxes[sandbox]
	if b == nil {
		return false
	}
	el := b.index[k]
	if el == nil {
		return false
	}
	if now.After(el.Value.(*resolvedEntry).expires) {
		b.remove(el)
		return false
	}
	return true
}

// Forget drops everything known about sandbox (call it when the sandbox ends).
func (r *Resolutions) Forget(sandbox string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.boxes, sandbox)
}

// Len returns the number of entries held for sandbox (expired ones included
// until they are noticed).
func (r *Resolutions) Len(sandbox string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.boxes[sandbox]; b != nil {
		return b.order.Len()
	}
	return 0
}

// put inserts or refreshes k; r.mu is held.
func (r *Resolutions) put(b *resolvedBox, k resolvedKey, exp time.Time) {
	if el := b.index[k]; el != nil {
		el.Value.(*resolvedEntry).expires = exp
		b.order.MoveToBack(el)
		return
	}
	b.index[k] = b.order.PushBack(&resolvedEntry{key: k, expires: exp})
	for b.order.Len() > r.limit() {
		b.remove(b.order.Front())
	}
}

// pruneOldest drops expired entries from the old end, stopping at the first
// live one: cheap, and enough to keep a busy sandbox's cache from filling
// with dead entries (Has drops any expired entry it meets).
func (b *resolvedBox) pruneOldest(now time.Time) {
	for el := b.order.Front(); el != nil && now.After(el.Value.(*resolvedEntry).expires); el = b.order.Front() {
		b.remove(el)
	}
}

func (b *resolvedBox) remove(el *list.Element) {
	delete(b.index, el.Value.(*resolvedEntry).key)
	b.order.Remove(el)
}

// box returns sandbox's cache, creating it; r.mu is held.
func (r *Resolutions) box(sandbox string) *resolvedBox {
	if r.boxes == nil {
		r.boxes = make(map[string]*resolvedBox)
	}
	b := r.boxes[sandbox]
	if b == nil {
		b = &resolvedBox{index: make(map[resolvedKey]*list.Element)}
		r.boxes[sandbox] = b
	}
	return b
}

func (r *Resolutions) clamp(ttl time.Duration) time.Duration {
	lo, hi := orDefault(r.MinTTL, DefaultMinTTL), orDefault(r.MaxTTL, DefaultMaxTTL)
	return min(max(ttl, lo), max(hi, lo))
}

func (r *Resolutions) limit() int {
	if r.MaxPerSandbox > 0 {
		return r.MaxPerSandbox
	}
	return DefaultMaxPerSandbox
}

func (r *Resolutions) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// NormName is the form names are compared in: lower case, no trailing dot.
func NormName(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ".")
}
