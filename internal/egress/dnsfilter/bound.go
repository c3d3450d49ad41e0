package dnsfilter

import (
	"fmt"
	"sync"

	"github.com/sbx-dev/sbx/internal/ratelimit"
)

// Per-sandbox bounds of the filter, a service every sandbox shares. Before
// them, one sandbox sending UDP queries as fast as it could made the daemon
// forward each at once (a socket and a goroutine each, for up to the
// upstream timeout) and audit each: 16,000 goroutines, 19,000 descriptors
// and 14 MB of audit log in 5 s, until the daemon hit its descriptor limit
// and could no longer reap sandboxes.
const (
	DefaultRate        = 100  // queries a second per sandbox
	DefaultBurst       = 500  // queries at once per sandbox
	DefaultMaxInFlight = 32   // upstream forwards at once per sandbox
	DefaultMaxForwards = 1024 // upstream forwards at once in all
)

// bounds is the filter's per-sandbox state: the query rate and the
// forwards in flight.
type bounds struct {
	lim      *ratelimit.Limiter
	mu       sync.Mutex // guards flight and total
	flight   map[string]int
	total    int
	perSB    int
	forwards int
}

func (f *Filter) initBounds() {
	rate, burst := f.Rate, f.Burst
	if rate == 0 {
		rate, burst = DefaultRate, DefaultBurst
	}
	f.b = &bounds{lim: ratelimit.New(rate, burst), flight: map[string]int{},
		perSB: orDefault(f.MaxInFlight, DefaultMaxInFlight), forwards: orDefault(f.MaxForwards, DefaultMaxForwards)}
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// admit spends a query of sb's rate. A refused query is not logged; once a
// second the refusals since the last report are logged as one entry.
func (f *Filter) admit(sb string) bool {
	ok, n := f.b.lim.Allow(sb)
	if n > 0 {
		f.log(sb, "", "", fmt.Sprintf("rate limited: %d queries refused", n))
	}
	return ok
}

// acquire takes a forward slot of sb (false: sb or the filter has as many
// in flight as allowed); release gives it back.
func (f *Filter) acquire(sb string) bool {
	b := f.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.flight[sb] >= b.perSB || b.total >= b.forwards {
		return false
	}
	b.flight[sb]++
	b.total++
	return true
}

func (f *Filter) release(sb string) {
	b := f.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total--
	if b.flight[sb]--; b.flight[sb] <= 0 {
		delete(b.flight, sb)
	}
}
