package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Target is a running sandbox to sample.
type Target struct {
	ID, Team  string
	CPUCount  int
	MemTotal  int64 // bytes
	DiskTotal int64 // bytes
	// Agent is the base URL of the sandbox's agent and Token its access
	// token, to read its event log ("" skips it).
	Agent, Token string
}

// Counters are a sandbox's raw figures at one instant (CPUNanos < 0:
// unknown).
type Counters struct {
	CPUNanos, MemUsed, MemCache, DiskUsed int64
}

// Source lists running sandboxes and reads their counters (the manager).
type Source interface {
	Targets() []Target
	Counters(id string) (Counters, error)
}

// Collector samples every running sandbox each Step into a Store, and
// moves their agents' events into their logs. Tick is not safe for
// concurrent use (Run calls it from one goroutine).
type Collector struct {
	store *Store
	src   Source
	log   *slog.Logger
	prev  map[string]cpuMark // last CPU reading per sandbox; Run's goroutine only
}

type cpuMark struct {
	nanos int64
	at    time.Time
}

// NewCollector returns a collector of src into st.
func NewCollector(st *Store, src Source, log *slog.Logger) *Collector {
	return &Collector{store: st, src: src, log: log, prev: map[string]cpuMark{}}
}

// Run samples at every multiple of Step until ctx ends. Agents are read on
// a loop of their own, so a slow agent never delays the samples.
func (c *Collector) Run(ctx context.Context) {
	go every(ctx, Step, Step/2, func(time.Time) { c.ReadAgents(ctx) })
	every(ctx, Step, 0, func(t time.Time) { c.Tick(t) })
}

// every calls fn at each multiple of d plus offset until ctx ends; a call
// that overruns skips the instants it missed.
func every(ctx context.Context, d, offset time.Duration, fn func(time.Time)) {
	for {
		next := time.Now().Add(-offset).Truncate(d).Add(d + offset)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		fn(next)
	}
}

// Tick takes one round of samples stamped t, and drops what has expired.
func (c *Collector) Tick(t time.Time) {
	targets := c.src.Targets()
	running := map[string]int{}
	seen := make(map[string]bool, len(targets))
	for _, tg := range targets {
		running[tg.Team]++
		seen[tg.ID] = true
		c.sample(tg, t)
	}
	for id := range c.prev {
		if !seen[id] {
			delete(c.prev, id)
		}
	}
	c.store.tickTeams(t, running, Step)
	c.store.gc()
}

// sample records one Sample of tg at t. The CPU figure is the share used
// since the previous reading (the first one: since t-Step, counted as idle).
func (c *Collector) sample(tg Target, t time.Time) {
	cn, err := c.src.Counters(tg.ID)
	if err != nil {
		return // ended or paused between listing and reading
	}
	now := time.Now()
	smp := Sample{Time: t.UTC(), CPUCount: tg.CPUCount, MemUsed: cn.MemUsed, MemTotal: tg.MemTotal,
		MemCache: cn.MemCache, DiskUsed: cn.DiskUsed, DiskTotal: tg.DiskTotal}
	if p, ok := c.prev[tg.ID]; ok && cn.CPUNanos >= p.nanos && p.nanos >= 0 {
		smp.CPUUsedPct = cpuPercent(cn.CPUNanos-p.nanos, now.Sub(p.at), tg.CPUCount)
	}
	c.prev[tg.ID] = cpuMark{cn.CPUNanos, now}
	c.store.Record(tg.ID, smp)
}

// cpuPercent is cpu time over wall time d on cores CPUs, in percent of all
// of them, rounded to 0.01 and at most 100.
func cpuPercent(cpu int64, d time.Duration, cores int) float64 {
	if d <= 0 {
		return 0
	}
	p := 100 * float64(cpu) / float64(d.Nanoseconds()) / float64(max(cores, 1))
	return float64(int64(min(p, 100)*100+0.5)) / 100
}

// agentParallel bounds the agents read at once.
const agentParallel = 8

// ReadAgents moves the running sandboxes' new agent events into their
// logs, a few agents at a time, each read bounded by agentTimeout; agents
// whose last read failed slowly rest a while (agentRestMin), so that a
// tenant's stalled agents do not hold the slots. Drain reads them anyway.
func (c *Collector) ReadAgents(ctx context.Context) {
	targets := c.src.Targets()
	seen := make(map[string]bool, len(targets))
	for _, tg := range targets {
		seen[tg.ID] = true
	}
	defer c.store.agents.forget(seen)
	sem := make(chan struct{}, agentParallel)
	var wg sync.WaitGroup
	for _, tg := range targets {
		if tg.Agent == "" || c.store.agents.resting(tg.ID) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for _, e := range c.store.agents.read(ctx, tg) {
				c.store.Log(tg.ID, e)
			}
		}()
	}
	wg.Wait()
}
