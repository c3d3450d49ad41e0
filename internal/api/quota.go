package api

import (
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/ratelimit"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// Per-team quotas. A team's own Quota field wins over Tenants.Defaults
// where it is non-zero; a negative value is unlimited. The default (admin)
// team has no quota: it is the operator's. Past a limit the request fails
// with sandbox.ErrBusy (429 with Retry-After); nothing was started.

// noop is the release of a reservation that holds nothing.
func noop() {}

// usage is what live sandboxes (or a request) hold.
type usage struct{ sandboxes, vcpu, memMB int }

// quotaState is the in-flight side of the quotas: creates admitted but not
// yet live, and each team's create-rate bucket.
type quotaState struct {
	mu      sync.Mutex // guards both maps
	pending map[string]usage
	buckets map[string]*ratelimit.Bucket // rate: the team's creates a second, burst max(1, rate)
}

// effective is team's quota with the defaults filled in.
func (t *Tenants) effective(team string) store.Quota {
	q := t.Defaults
	t.mu.RLock()
	if tm, ok := t.teams[team]; ok {
		o := tm.Quota
		q.Sandboxes, q.VCPU, q.MemoryMB = pick(o.Sandboxes, q.Sandboxes), pick(o.VCPU, q.VCPU), pick(o.MemoryMB, q.MemoryMB)
		q.Builds = pick(o.Builds, q.Builds)
		if o.CreatesPerSec != 0 {
			q.CreatesPerSec = o.CreatesPerSec
		}
		if o.DiskMB != 0 {
			q.DiskMB = o.DiskMB
		}
	}
	t.mu.RUnlock()
	return q
}

func pick(own, def int) int {
	if own != 0 {
		return own
	}
	return def
}

// over reports whether have+want passes limit (0 or less: unlimited).
func over(limit, have, want int) bool { return limit > 0 && have+want > limit }

func quotaErr(what string, limit int) error {
	return fmt.Errorf("%w: team quota: at most %d %s", sandbox.ErrBusy, limit, what)
}

// reserve admits want for team given its live usage, counting it as
// pending until the returned release is called (once the sandboxes are live
// or failed). Checks and reservation happen under one lock, so many
// requests at once never pass a limit together.
func (t *Tenants) reserve(team string, live, want usage) (func(), error) {
	if t == nil || team == "" {
		return noop, nil
	}
	q := t.effective(team)
	t.quota.mu.Lock()
	defer t.quota.mu.Unlock()
	if t.quota.pending == nil {
		t.quota.pending, t.quota.buckets = map[string]usage{}, map[string]*ratelimit.Bucket{}
	}
	p := t.quota.pending[team]
	switch {
	case over(q.Sandboxes, live.sandboxes+p.sandboxes, want.sandboxes):
		return noop, quotaErr("sandboxes", q.Sandboxes)
	case over(q.VCPU, live.vcpu+p.vcpu, want.vcpu):
		return noop, quotaErr("vCPUs", q.VCPU)
	case over(q.MemoryMB, live.memMB+p.memMB, want.memMB):
		return noop, quotaErr("MiB of memory", q.MemoryMB)
	}
	if err := t.take(team, q.CreatesPerSec, want.sandboxes); err != nil {
		return noop, err
	}
	t.quota.pending[team] = usage{p.sandboxes + want.sandboxes, p.vcpu + want.vcpu, p.memMB + want.memMB}
	return func() {
		t.quota.mu.Lock()
		defer t.quota.mu.Unlock()
		c := t.quota.pending[team]
		t.quota.pending[team] = usage{c.sandboxes - want.sandboxes, c.vcpu - want.vcpu, c.memMB - want.memMB}
	}, nil
}

// take spends n tokens of team's create-rate bucket. quota.mu is held.
func (t *Tenants) take(team string, rate float64, n int) error {
	if rate <= 0 || n == 0 {
		return nil
	}
	now := time.Now()
	burst := math.Max(1, rate)
	b, ok := t.quota.buckets[team]
	if !ok {
		full := ratelimit.Full(burst, now)
		b = &full
		t.quota.buckets[team] = b
	}
	if !b.Take(now, rate, burst, float64(n)) {
		return fmt.Errorf("%w: team quota: at most %g creates a second", sandbox.ErrBusy, rate)
	}
	return nil
}

// liveUsage sums the team's sandboxes that hold host resources.
func (s *Server) liveUsage(team string) usage {
	var u usage
	for _, in := range s.mgr.List() {
		if in.Team == team && in.State != store.StatePaused {
			u.sandboxes++
			u.vcpu += in.CPUCount
			u.memMB += in.MemoryMB
		}
	}
	return u
}

// reserveCreate admits n sandboxes of res for the request's team.
func (s *Server) reserveCreate(team string, n int, res sandbox.Resources) (func(), error) {
	d := s.mgr.Config().Defaults
	if res.CPUCount == 0 {
		res.CPUCount = d.CPUCount
	}
	if res.MemoryMB == 0 {
		res.MemoryMB = d.MemoryMB
	}
	var live usage
	if s.tenants.boundsLive(team) {
		// A walk over every sandbox (the manager's lock held while it
		// copies them): not on the path of a create no bound needs it for.
		live = s.liveUsage(team)
	}
	return s.tenants.reserve(team, live, usage{n, n * res.CPUCount, n * res.MemoryMB})
}

// boundsLive reports whether team's quota bounds its live sandboxes, vCPUs
// or memory: only then does reserve need the team's live usage.
func (t *Tenants) boundsLive(team string) bool {
	if t == nil || team == "" {
		return false
	}
	q := t.effective(team)
	return q.Sandboxes > 0 || q.VCPU > 0 || q.MemoryMB > 0
}

// reserveFork admits count children of the sandbox id (its resources).
func (s *Server) reserveFork(r *http.Request, id string, count int) (func(), error) {
	in, err := s.mgr.Owned(teamOf(r), id)
	if err != nil {
		return noop, err
	}
	if count < 1 {
		count = 1 // the manager refuses it with its own message
	}
	return s.reserveCreate(in.Team, count, sandbox.Resources{CPUCount: in.CPUCount, MemoryMB: in.MemoryMB})
}

// reserveResume admits the paused sandbox id coming back (nothing to
// reserve for a running one).
func (s *Server) reserveResume(r *http.Request, id string) (func(), error) {
	in, err := s.mgr.Owned(teamOf(r), id)
	if err != nil || in.State != store.StatePaused {
		return noop, nil // the manager answers for it
	}
	return s.reserveCreate(in.Team, 1, sandbox.Resources{CPUCount: in.CPUCount, MemoryMB: in.MemoryMB})
}
