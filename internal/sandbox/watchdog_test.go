package sandbox_test

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
)

// realInits makes every fake sandbox's init a real process (sleep) that the
// test can kill, as an agent or a Sentry dies; all are killed at the end.
func realInits(t *testing.T, h *sandboxtest.Host) {
	var mu sync.Mutex
	var cmds []*exec.Cmd
	h.StartInit = func() int {
		c := exec.Command("sleep", "600")
		if err := c.Start(); err != nil {
			t.Error(err)
			return 0
		}
		go c.Wait() //nolint:errcheck // reaps it when it dies
		mu.Lock()
		cmds = append(cmds, c)
		mu.Unlock()
		return c.Process.Pid
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
	})
}

// killInitOf SIGKILLs the init of sandbox id.
func killInitOf(t *testing.T, h *sandboxtest.Host, id string) {
	t.Helper()
	h.Mu.Lock()
	pid := h.Pids[id]
	h.Mu.Unlock()
	if pid <= 1 {
		t.Fatalf("no init pid for %s", id)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// pooledID is the id of the one sandbox h runs (a pool's, before a claim).
func pooledID(h *sandboxtest.Host) string {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	for id := range h.Running {
		return id
	}
	return ""
}

// deaths counts Observer.Died calls.
type deaths struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *deaths) CreatePhase(string, string, time.Duration)      {}
func (d *deaths) Created(string, bool, time.Duration, error)     {}
func (d *deaths) Lifecycle(string, string, time.Duration, error) {}
func (d *deaths) Refused(string)                                 {}
func (d *deaths) PoolClaim(string, string, bool)                 {}
func (d *deaths) PoolRefill(string, string, error)               {}
func (d *deaths) PauseRefused(string, bool)                      {}
func (d *deaths) Died(rt string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.n[rt]++
}
func (d *deaths) count(rt string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[rt]
}

// TestWatchdogNoticesAtOnce: a running sandbox whose init dies is reaped
// (gone from Get and List, host released, counted) within
// half a second, by the init's pidfd, not at the next sweep (before: a
// /proc poll every 2 s, so 1 s on average).
func TestWatchdogNoticesAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := sandboxtest.NewHost()
	realInits(t, h)
	m := newTestManager(t, h, openStore(t, t.TempDir()))
	obs := &deaths{}
	m.SetObserver(obs)
	go m.RunWatchdog(ctx)
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the watchdog is parked, between sweeps
	killInitOf(t, h, in.ID)
	start := time.Now()
	waitFor(t, func() bool { _, err := m.Get(in.ID); return errors.Is(err, ErrNotFound) })
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a dead sandbox was noticed after %v", d)
	}
	waitFor(t, func() bool { return h.Residue() == "" && obs.count("fake") == 1 })
	if l := m.List(); len(l) != 0 {
		t.Fatalf("list %v", l)
	}
}

// TestWatchdogReapsDeadPooled: a pooled sandbox whose init dies is taken
// out of its pool, reaped and replaced (before: it stayed in the pool, and
// the create that claimed it waited for its dead agent, ~13 s on runsc,
// before starting cold).
func TestWatchdogReapsDeadPooled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	realInits(t, h)
	key := PoolKey{Template: "base", Runtime: "fake"}
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) { c.Pools = map[PoolKey]int{key: 1} })
	obs := &deaths{}
	m.SetObserver(obs)
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	go m.RunWatchdog(ctx)
	waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
	dead := pooledID(h)
	killInitOf(t, h, dead)
	waitFor(t, func() bool {
		h.Mu.Lock()
		defer h.Mu.Unlock()
		return !h.Running[dead] && len(h.Running) == 1 && obs.count("fake") == 1
	})
	waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil || in.ID == dead {
		t.Fatalf("create: %v, got %s (the dead one: %s)", err, in.ID, dead)
	}
	_ = m.Kill(ctx, in.ID)
}

// TestClaimSkipsDeadPooled: a create never claims a pooled sandbox whose
// init is gone, even before the watchdog has reaped it: it starts cold.
func TestClaimSkipsDeadPooled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	realInits(t, h)
	key := PoolKey{Template: "base", Runtime: "fake"}
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) { c.Pools = map[PoolKey]int{key: 1} })
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
	dead := pooledID(h)
	killInitOf(t, h, dead)
	time.Sleep(100 * time.Millisecond) // the sleep is gone (reaped by its Wait)
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil || in.ID == dead {
		t.Fatalf("create: %v, got %s (the dead pooled one: %s)", err, in.ID, dead)
	}
	_ = m.Kill(ctx, in.ID)
}

// TestWatchdogLooksAtTheDeadOnly: an init's end has the watchdog read that
// init's /proc entry, not every live sandbox's (before: each of a burst's
// kills, whose ends wake it, read all of them: O(n²) in the burst).
func TestWatchdogLooksAtTheDeadOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := sandboxtest.NewHost()
	realInits(t, h)
	m := newTestManager(t, h, openStore(t, t.TempDir()))
	const n = 8
	var ids []string
	for range n {
		in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	reads := CountProcessAlive(t)
	go m.RunWatchdog(ctx)
	for i, id := range ids {
		killInitOf(t, h, id)
		waitFor(t, func() bool { return len(m.List()) == n-1-i })
	}
	if r := reads.Load(); r > 2*n {
		t.Errorf("%d reads of /proc for %d deaths", r, n)
	}
}
