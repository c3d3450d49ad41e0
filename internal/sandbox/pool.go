package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// PoolKey names a warm pool: sandboxes of one template on one runtime.
// Template is the name the pool was configured with (--pool), which the
// default team's view resolves (Templates.Get).
type PoolKey struct{ Template, Runtime string }

// pool holds started, never-initialised sandboxes: agent up, no token, no
// tenant data. Guarded by Manager.mu.
type pool struct {
	key    PoolKey // as configured: metrics name the pool by it
	target int
	// name and build are the resolved Template.Name and Build its
	// sandboxes run: a built-in's name (no build), a user template's id
	// and its tag's build (learnt at each refill). Creates find their pool
	// by both (poolLocked): they resolve names to ids, and the pools of
	// two tags of one template (my-app, my-app@v2) share the id.
	name    string
	build   string
	ready   []*Sandbox
	filling int
	// failures counts refills in a row that failed; no refill of the pool
	// starts before retryAt (refillBackoff).
	failures int
	retryAt  time.Time
	// waiters counts creates waiting in claimOrWait for a refill to land;
	// landed is closed (and replaced) whenever a refill of the pool ends.
	waiters int
	landed  chan struct{}
	// stale is set by a claim that found a sandbox of another build than
	// the create's: RunPools then checks the pool against its template's
	// current build (evictStale).
	stale bool
	// snapNoted: the log said the pool is kept empty (errSnapshotServes).
	snapNoted bool
}

// errSnapshotServes is a refill not made because the creates its pool
// would serve restore the template's snapshot (its start command running
// and ready) before they look in a pool: its sandboxes would never be
// claimed. The pool checks again every snapshotRecheck (a rebuild without
// a start command, or another runtime's, makes it useful again).
var errSnapshotServes = errors.New("creates of the template restore its start-command snapshot")

const snapshotRecheck = 30 * time.Second

// refillBackoff is how long a pool whose last n refills failed waits
// before the next: 1 s doubling to 30 s, so a broken template or runtime
// costs a cold start now and then, not ten a second.
func refillBackoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return min(time.Second<<min(n-1, 5), 30*time.Second)
}

// refillEvery is how often pools are checked; a claim also wakes the
// refiller at once.
const refillEvery = 100 * time.Millisecond

// maxFilling bounds the refills in flight over all pools (each is a cold
// start; the node has few cores).
const maxFilling = 2

// claimLocked pops a ready sandbox of key if it has the request's
// resources (a pool's sandboxes have its template's defaults) and runs build
// (a rebuilt template's pool keeps sandboxes of the old build until they are
// refilled); it also returns the pool (nil when key has none). A claim takes
// no create slot. m.mu must be held.
func (m *Manager) claimLocked(key PoolKey, build string, res Resources) (*Sandbox, *pool) {
	p := m.poolLocked(key, build)
	if p == nil {
		return nil, nil
	}
	if len(p.ready) == 0 {
		return nil, p
	}
	sb := p.ready[len(p.ready)-1]
	if initDead(sb) { // died since the watchdog last looked: it reaps it
		m.noteExit(sb.rt.Pid())
		return nil, p
	}
	r := sb.rec
	if r.Build != build {
		p.stale = true
		return nil, p
	}
	if !sameShape(Resources{CPUCount: r.CPUCount, MemoryMB: r.MemoryMB, DiskSizeMB: r.DiskSizeMB}, res) {
		return nil, p
	}
	p.ready = p.ready[:len(p.ready)-1]
	return sb, p
}

// poolLocked is the pool whose sandboxes run build of template
// key.Template (a resolved Template.Name) on key.Runtime, nil if none;
// of two such pools (my-app and my-app@latest), one with a sandbox ready.
// A create whose build no pool of its template runs (one of them was
// rebuilt) marks those pools for a check against their templates
// (evictStale), which replaces the sandboxes of an older build. m.mu must
// be held.
func (m *Manager) poolLocked(key PoolKey, build string) *pool {
	var found *pool
	var others []*pool // of the template, of another build
	for k, p := range m.pools {
		switch {
		case k.Runtime != key.Runtime || p.name != key.Template:
		case p.build != build:
			others = append(others, p)
		case found == nil || len(found.ready) == 0:
			found = p
		}
	}
	if found == nil {
		for _, p := range others {
			p.stale = true
		}
	}
	return found
}

// refillWait bounds how long a create waits for a refill in flight (a
// variable for the tests).
var refillWait = 2 * time.Second

// claimOrWait claims a pooled sandbox of tmpl on rt (claimLocked), except
// that when the pool is empty while a refill of it is in flight that no
// other create waits for, and that refill makes sandboxes this create can
// take (res are the template's own, poolFits), it waits for the refill to
// land (up to refillWait or ctx's end) and claims then: the refill started
// before this create, so it ends before a cold start begun now would, and
// the node does not run both.
func (m *Manager) claimOrWait(ctx context.Context, tmpl Template, rt string, res Resources) *Sandbox {
	key := PoolKey{tmpl.Name, rt}
	var deadline <-chan time.Time // set at the first wait
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		sb, p := m.claimLocked(key, tmpl.Build, res)
		if p == nil {
			return nil
		}
		wait := sb == nil && p.filling > p.waiters && (deadline != nil || m.poolFits(tmpl, res))
		if !wait {
			m.observer().PoolClaim(p.key.Template, key.Runtime, sb != nil)
			return sb
		}
		if deadline == nil {
			t := time.NewTimer(refillWait)
			defer t.Stop()
			deadline = t.C
		}
		p.waiters++
		landed := p.landed
		m.mu.Unlock()
		expired := false
		select {
		case <-landed:
		case <-ctx.Done():
			expired = true
		case <-deadline:
			expired = true
		}
		m.mu.Lock()
		p.waiters--
		if expired {
			sb, _ := m.claimLocked(key, tmpl.Build, res)
			m.observer().PoolClaim(p.key.Template, key.Runtime, sb != nil)
			return sb
		}
	}
}

// kickRefill wakes RunPools now rather than at its next tick. Create calls
// it once a claimed sandbox is handed over, not at the claim: a refill
// started then would contend with the claim's own /init and record write.
func (m *Manager) kickRefill() {
	select {
	case m.refillKick <- struct{}{}:
	default:
	}
}

// RunPools keeps every configured pool filled until ctx ends. A claimed
// sandbox's hand-over starts a refill at once, so a sequential run does not drain a pool:
// claims take no create slot and do not hold refills back. Refills never
// compete with cold starts (none runs while one is in flight or queued),
// run at most maxFilling at once and never push the node past
// MaxSandboxes. A refilled sandbox is warmed (warm.go) before it is offered.
// Pooled sandboxes are not re-adopted after a restart: Recover reaps them
// and the pools refill. When ctx ends, RunPools returns only after the
// refills in flight ended and every pooled sandbox was reaped, so a daemon
// that exits after it leaves nothing of its pools on the host.
func (m *Manager) RunPools(ctx context.Context) {
	m.mu.Lock()
	m.pools = map[PoolKey]*pool{}
	for k, n := range m.cfg.Pools {
		if n > 0 {
			m.pools[k] = &pool{key: k, target: n, name: k.Template, landed: make(chan struct{})}
		}
	}
	m.mu.Unlock()
	t := time.NewTicker(refillEvery)
	defer t.Stop()
	var fills sync.WaitGroup
	checked := time.Now()
	for {
		select {
		case <-ctx.Done():
			fills.Wait() // a refill ends (reaping what it started) or joins a pool
			m.drainPools()
			return
		case <-t.C:
		case <-m.refillKick:
		}
		if time.Since(checked) >= staleEvery {
			checked = time.Now()
			m.markStale()
		}
		for _, k := range m.takeStale() {
			fills.Add(1)
			go func() { defer fills.Done(); m.evictStale(ctx, k) }()
		}
		for {
			k, ok := m.nextRefill()
			if !ok {
				break
			}
			fills.Add(1)
			go func() { defer fills.Done(); m.fill(ctx, k) }()
		}
	}
}

// nextRefill picks a pool below target and reserves a fill slot.
func (m *Manager) nextRefill() (PoolKey, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.creating+m.waiting > 0 || (m.cfg.MaxSandboxes > 0 && m.countLocked() >= m.cfg.MaxSandboxes) {
		return PoolKey{}, false
	}
	filling := 0
	for _, p := range m.pools {
		filling += p.filling
	}
	if filling >= maxFilling {
		return PoolKey{}, false
	}
	now := time.Now()
	for k, p := range m.pools {
		if len(p.ready)+p.filling < p.target && !now.Before(p.retryAt) {
			p.filling++
			return k, true
		}
	}
	return PoolKey{}, false
}

// countLocked counts sandboxes holding host resources. m.mu must be held.
func (m *Manager) countLocked() int {
	n := m.activeLocked() + m.creating
	for _, p := range m.pools {
		n += len(p.ready) + p.filling
	}
	return n
}

func (m *Manager) fill(ctx context.Context, k PoolKey) {
	sb, err := m.startPooled(ctx, k)
	snapServes, outdated := errors.Is(err, errSnapshotServes), errors.Is(err, errOutdated)
	if !snapServes && !outdated {
		m.observer().PoolRefill(k.Template, k.Runtime, err)
	}
	m.mu.Lock()
	p := m.pools[k]
	p.filling--
	note := snapServes && !p.snapNoted
	switch {
	case err == nil:
		p.ready = append(p.ready, sb)
		p.name, p.build = sb.rec.TemplateID, sb.rec.Build
		p.failures, p.snapNoted = 0, false
		m.watchExit(sb)
	case outdated: // refilled at once (kickRefill below), no backoff
	case snapServes:
		p.retryAt, p.snapNoted = time.Now().Add(snapshotRecheck), true
	default:
		p.failures++
		p.retryAt = time.Now().Add(refillBackoff(p.failures))
	}
	n := p.failures
	close(p.landed)
	p.landed = make(chan struct{})
	m.mu.Unlock()
	if note {
		m.log.Info("warm pool kept empty: creates of its template restore the template's start-command snapshot instead", "template", k.Template, "runtime", k.Runtime)
	}
	if outdated {
		m.log.Info("warm pool: reaped a refill of an older build of its template, or of a deleted one", "template", k.Template, "runtime", k.Runtime)
		m.kickRefill()
	}
	if err != nil && !snapServes && !outdated {
		m.log.Warn("warm pool refill failed", "template", k.Template, "runtime", k.Runtime, "failuresInARow", n, "retryIn", refillBackoff(n), "err", err)
	}
}

func (m *Manager) startPooled(ctx context.Context, k PoolKey) (*Sandbox, error) {
	tmpl, err := m.templates.Get(k.Template)
	if err != nil {
		return nil, err
	}
	res, err := m.pooledResources(tmpl)
	if err != nil {
		return nil, err
	}
	if _, ok := m.templateSnapshot(ctx, tmpl, k.Runtime, res); ok {
		return nil, errSnapshotServes
	}
	rec := newRecord(tmpl, k.Runtime, res)
	rec.State = store.StatePooled
	if err := m.store.Put(ctx, &rec); err != nil {
		return nil, err
	}
	sb, err := m.start(ctx, &rec, tmpl, res)
	if err == nil {
		err = m.warm(ctx, sb)
	}
	if err == nil {
		err = m.preInit(ctx, sb)
	}
	if err == nil {
		err = m.stillCurrent(k, tmpl)
	}
	if err != nil {
		m.reap(context.WithoutCancel(ctx), rec.ID, rec.Runtime, nil)
		return nil, err
	}
	return sb, nil
}

// pooledResources are the resources of tmpl's pooled sandboxes: what a
// create that asks for none gets, the template's own (E2B's template
// cpuCount/memoryMB), else the daemon's defaults.
func (m *Manager) pooledResources(tmpl Template) (Resources, error) {
	return m.resources(Resources{CPUCount: tmpl.CPUCount, MemoryMB: tmpl.MemoryMB})
}

// poolFits reports whether tmpl's pooled sandboxes have resources res.
func (m *Manager) poolFits(tmpl Template, res Resources) bool {
	p, err := m.pooledResources(tmpl)
	return err == nil && sameShape(p, res)
}

// sameShape reports whether a sandbox of resources a serves a create that
// asks for b: CPU, memory and disk (pids are the daemon's, never asked for).
func sameShape(a, b Resources) bool {
	return a.CPUCount == b.CPUCount && a.MemoryMB == b.MemoryMB && a.DiskSizeMB == b.DiskSizeMB
}

// drainPools reaps every pooled sandbox (on shutdown they would be reaped by
// the next Recover anyway; doing it now frees the host sooner).
func (m *Manager) drainPools() {
	m.mu.Lock()
	var all []*Sandbox
	for _, p := range m.pools {
		all = append(all, p.ready...)
		p.ready = nil
	}
	m.mu.Unlock()
	for _, sb := range all {
		sb.closeAgent()
		_ = m.reap(context.Background(), sb.rec.ID, sb.rec.Runtime, sb.rt)
	}
}

// PoolStats reports ready sandboxes per pool.
func (m *Manager) PoolStats() map[PoolKey]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[PoolKey]int{}
	for k, p := range m.pools {
		out[k] = len(p.ready)
	}
	return out
}
