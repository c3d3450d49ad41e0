package sandbox_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/failpoint"
	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
)

func newTestManager(t *testing.T, h *sandboxtest.Host, st *store.Store, tweak ...func(*Config)) *Manager {
	port := sandboxtest.StartAgent(t)
	cfg := Config{DefaultRuntime: "fake", AgentPort: port, DefaultTimeout: time.Minute, MaxTimeout: time.Hour,
		Defaults: Resources{CPUCount: 1, MemoryMB: 256, DiskSizeMB: 256, Pids: 100},
		Max:      Resources{CPUCount: 4, MemoryMB: 2048, DiskSizeMB: 2048}, MaxCreating: 4}
	for _, f := range tweak {
		f(&cfg)
	}
	m, err := New(cfg, st, Runtimes{"fake": sandboxtest.NewRuntime(h)}, h, sandboxtest.NewLayers(h), sandboxtest.Templates{},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func openStore(t *testing.T, dir string) *store.Store {
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestCreateKill(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	m := newTestManager(t, h, openStore(t, t.TempDir()))
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute, Metadata: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(in.ID) || in.State != "running" || in.EnvdToken == "" || in.AgentAddr == "" {
		t.Fatalf("created %+v", in)
	}
	if got := m.List(); len(got) != 1 || got[0].Metadata["a"] != "b" {
		t.Fatalf("List = %+v", got)
	}
	if err := m.Kill(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Kill(ctx, in.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("double kill = %v", err)
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue after kill: %s", r)
	}
}

func TestCreateValidation(t *testing.T) {
	h := sandboxtest.NewHost()
	m := newTestManager(t, h, openStore(t, t.TempDir()))
	tests := []struct {
		name string
		o    CreateOpts
		want error
	}{
		{"unknown template", CreateOpts{Template: "nope", Timeout: time.Minute}, ErrNotFound},
		{"unknown runtime", CreateOpts{Template: "base", Runtime: "kvm", Timeout: time.Minute}, ErrInvalid},
		{"too much memory", CreateOpts{Template: "base", Timeout: time.Minute, Resources: Resources{MemoryMB: 1 << 20}}, ErrInvalid},
		{"negative cpu", CreateOpts{Template: "base", Timeout: time.Minute, Resources: Resources{CPUCount: -1}}, ErrInvalid},
	}
	for _, tt := range tests {
		if _, err := m.Create(context.Background(), tt.o); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue after rejected creates: %s", r)
	}
}

func TestFailedCreateLeavesNothing(t *testing.T) {
	h := sandboxtest.NewHost()
	h.FailStart = errors.New("runtime exploded")
	st := openStore(t, t.TempDir())
	m := newTestManager(t, h, st)
	if _, err := m.Create(context.Background(), CreateOpts{Template: "base", Timeout: time.Minute}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue: %s", r)
	}
	if recs, _ := st.List(context.Background()); len(recs) != 0 {
		t.Fatalf("records left: %v", recs)
	}
}

// TestDeadline: SetTimeout replaces a sandbox's deadline: the sandbox
// outlives the one it was created with and is reaped at the new one.
func TestDeadline(t *testing.T) {
	h := sandboxtest.NewHost()
	m := newTestManager(t, h, openStore(t, t.TempDir()))
	// A loaded machine can stall this test past a deadline before it looks
	// (at 200/400 ms it did, 22 times in 150 runs): such an attempt shows
	// nothing and is made again; what one shows is asserted as before.
	var id string
	for attempt := 1; id == ""; attempt++ {
		if attempt > 5 {
			t.Fatal("every attempt was stalled past a deadline")
		}
		id = deadlineReplaced(t, m)
	}
	waitFor(t, func() bool { return h.Residue() == "" })
	if err := m.SetTimeout(context.Background(), id, time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetTimeout after expiry = %v", err)
	}
}

// deadlineReplaced creates a sandbox with a 300 ms deadline, replaces it
// with one of 1 s and checks the sandbox outlives the first. It returns the
// sandbox's id, or "" if the test was too late to tell: the first deadline
// ended the sandbox before SetTimeout ran, or the check ran after the
// replaced one.
func deadlineReplaced(t *testing.T, m *Manager) string {
	t.Helper()
	ctx := context.Background()
	in, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	if err := m.SetTimeout(ctx, in.ID, time.Second); errors.Is(err, ErrNotFound) && time.Now().After(in.EndAt) {
		return ""
	} else if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(in.EndAt) + 100*time.Millisecond) // past the first deadline and its timer's run
	got, err := m.Get(in.ID)
	switch {
	case err != nil && time.Since(set) < time.Second:
		t.Fatalf("killed before the replaced deadline: %v", err)
	case err != nil:
		return ""
	case got.EndAt.Before(set.Add(time.Second)):
		t.Fatalf("deadline %v after SetTimeout(1s) at %v", got.EndAt, set)
	}
	return in.ID
}

func TestRecoverAdoptsAndReaps(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	dir := t.TempDir()
	st := openStore(t, dir)
	m1 := newTestManager(t, h, st)
	keep, err := m1.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	lost, err := m1.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	m1.Close()
	// While "down": one sandbox's runtime dies, an orphan network appears,
	// and a half-made create is left in the store.
	h.Mu.Lock()
	delete(h.Running, lost.ID)
	h.Nets["orphanorphanorphan00"] = true
	h.Mu.Unlock()
	halfMade := NewID()
	_ = st.Put(ctx, &store.Sandbox{ID: halfMade, State: "creating", Runtime: "fake"})

	m2 := newTestManager(t, h, st)
	n, err := m2.Recover(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want 1 adopted", n, err)
	}
	if _, err := m2.Get(keep.ID); err != nil {
		t.Fatalf("kept sandbox not adopted: %v", err)
	}
	if _, err := m2.Get(lost.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("dead sandbox adopted: %v", err)
	}
	recs, _ := st.List(ctx)
	if len(recs) != 1 || recs[0].ID != keep.ID {
		t.Fatalf("records after recover: %d", len(recs))
	}
	_ = m2.Kill(ctx, keep.ID)
	if r := h.Residue(); r != "" {
		t.Fatalf("residue: %s", r)
	}
}

func TestAdmission(t *testing.T) {
	h := sandboxtest.NewHost()
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) { c.MaxSandboxes = 1 })
	if _, err := m.Create(context.Background(), CreateOpts{Template: "base", Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(context.Background(), CreateOpts{Template: "base", Timeout: time.Minute}); !errors.Is(err, ErrBusy) {
		t.Fatalf("over the limit: %v", err)
	}
}

func TestWarmPool(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) {
		c.Pools = map[PoolKey]int{{Template: "base", Runtime: "fake"}: 2}
	})
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	waitFor(t, func() bool { return m.PoolStats()[PoolKey{"base", "fake"}] == 2 })
	a, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute, EnvVars: map[string]string{"A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if a.EnvdToken == b.EnvdToken || a.ID == b.ID || a.State != "running" || a.EnvVars["A"] != "1" {
		t.Fatalf("claimed sandboxes not distinct/initialised: %+v %+v", a, b)
	}
	if got := len(m.List()); got != 2 {
		t.Fatalf("List shows %d sandboxes, want 2 (pooled ones are hidden)", got)
	}
	waitFor(t, func() bool { return m.PoolStats()[PoolKey{"base", "fake"}] == 2 })
	cancel()
	<-done
	_ = m.Kill(context.Background(), a.ID)
	_ = m.Kill(context.Background(), b.ID)
	if r := h.Residue(); r != "" {
		t.Fatalf("residue after drain: %s", r)
	}
}

// TestWarmPoolTemplateResources: a template with resources of its own has
// pooled sandboxes of those, and a create that asks for none claims one;
// one that asks for others starts cold.
func TestWarmPoolTemplateResources(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	key := PoolKey{Template: "big", Runtime: "fake"}
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) { c.Pools = map[PoolKey]int{key: 1} })
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
	h.Mu.Lock()
	var pooled string
	for id := range h.Running { // the pooled sandbox is the only one
		pooled = id
	}
	h.Mu.Unlock()
	a, err := m.Create(ctx, CreateOpts{Template: "big", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != pooled || a.MemoryMB != 1024 {
		t.Errorf("create got %s with %d MB, want the pooled %s with 1024", a.ID, a.MemoryMB, pooled)
	}
	waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
	b, err := m.Create(ctx, CreateOpts{Template: "big", Timeout: time.Minute, Resources: Resources{MemoryMB: 256}})
	if err != nil {
		t.Fatal(err)
	}
	if b.MemoryMB != 256 || m.PoolStats()[key] != 1 {
		t.Errorf("create asking 256 MB got %d MB; pool %d", b.MemoryMB, m.PoolStats()[key])
	}
	_ = m.Kill(context.Background(), a.ID)
	_ = m.Kill(context.Background(), b.ID)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	waitForIn(t, 5*time.Second, cond)
}

// waitForIn waits up to d for cond.
func waitForIn(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met in %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFailpointsLeaveNothing(t *testing.T) {
	for _, fp := range []string{"create/before-runtime", "create/after-runtime", "create/before-policy", "create/before-init", "create/before-record"} {
		t.Run(fp, func(t *testing.T) {
			failpoint.Set(fp)
			defer failpoint.Set("")
			h := sandboxtest.NewHost()
			st := openStore(t, t.TempDir())
			m := newTestManager(t, h, st)
			if _, err := m.Create(context.Background(), CreateOpts{Template: "base", Timeout: time.Minute}); !errors.Is(err, failpoint.ErrInjected) {
				t.Fatalf("err = %v", err)
			}
			if r := h.Residue(); r != "" {
				t.Fatalf("residue: %s", r)
			}
			if recs, _ := st.List(context.Background()); len(recs) != 0 {
				t.Fatalf("%d records left", len(recs))
			}
		})
	}
}

// TestPolicyFailureFailsClosed: a sandbox whose egress policy cannot be
// applied never gets its tenant (no /init) and leaves nothing behind.
func TestPolicyFailureFailsClosed(t *testing.T) {
	h := sandboxtest.NewHost()
	h.FailPolicy = errors.New("nftables down")
	st := openStore(t, t.TempDir())
	m := newTestManager(t, h, st)
	if _, err := m.Create(context.Background(), CreateOpts{Template: "base", Timeout: time.Minute}); err == nil {
		t.Fatal("create succeeded without its egress policy")
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue: %s", r)
	}
	if recs, _ := st.List(context.Background()); len(recs) != 0 {
		t.Fatalf("%d records left", len(recs))
	}
}

// TestReapAll: a node emptied by ReapAll keeps no sandbox of any state
// (running, pooled, half-made) and no orphan resource, and records none.
func TestReapAll(t *testing.T) {
	ctx := context.Background()
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	m1 := newTestManager(t, h, st)
	for i := 0; i < 2; i++ {
		if _, err := m1.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	m1.Close()
	h.Mu.Lock()
	h.Nets["orphanorphanorphan00"] = true
	h.Mu.Unlock()
	_ = st.Put(ctx, &store.Sandbox{ID: NewID(), State: "pooled", Runtime: "fake"})

	n, err := newTestManager(t, h, st).ReapAll(ctx)
	if err != nil || n != 3 {
		t.Fatalf("ReapAll = %d, %v; want 3 reaped", n, err)
	}
	if recs, _ := st.List(ctx); len(recs) != 0 {
		t.Fatalf("records after ReapAll: %d", len(recs))
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue: %s", r)
	}
}

// TestRecoverReapsPooled: pooled sandboxes a daemon left behind (it died
// without draining its pools) are reaped by the next start's Recover, never
// re-adopted, also when that start has no pools configured: a pool removed
// from the config keeps nothing running.
func TestRecoverReapsPooled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	st := openStore(t, t.TempDir())
	key := PoolKey{Template: "base", Runtime: "fake"}
	m1 := newTestManager(t, h, st, func(c *Config) { c.Pools = map[PoolKey]int{key: 2} })
	done := make(chan struct{})
	go func() { m1.RunPools(ctx); close(done) }()
	waitFor(t, func() bool { return m1.PoolStats()[key] == 2 })
	m1.Close() // "dies": its pools are not drained
	defer func() { cancel(); <-done }()

	n, err := newTestManager(t, h, st).Recover(ctx)
	if err != nil || n != 0 {
		t.Fatalf("Recover = %d, %v; want none adopted", n, err)
	}
	if recs, _ := st.List(ctx); len(recs) != 0 {
		t.Fatalf("records after Recover: %d", len(recs))
	}
	if r := h.Residue(); r != "" {
		t.Fatalf("residue: %s", r)
	}
}

// TestWarmPoolStopWaitsForRefills: RunPools returns only once the refills
// in flight ended, so a daemon exiting after it leaves no sandbox behind.
func TestWarmPoolStopWaitsForRefills(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	h.StartDelay = 300 * time.Millisecond
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) {
		c.Pools = map[PoolKey]int{{Template: "base", Runtime: "fake"}: 2}
	})
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	waitFor(t, func() bool { // a refill is under way
		h.Mu.Lock()
		defer h.Mu.Unlock()
		return len(h.Nets) > 0
	})
	cancel()
	<-done
	if r := h.Residue(); r != "" {
		t.Fatalf("RunPools returned with a refill still on the host: %s", r)
	}
}

// TestWarmPoolRefillBackoff: refills of a pool whose starts fail back off
// (1 s doubling) instead of retrying every tick, and the pool fills once
// starts work again.
func TestWarmPoolRefillBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	h.FailStart = errors.New("runtime broken")
	key := PoolKey{Template: "base", Runtime: "fake"}
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) { c.Pools = map[PoolKey]int{key: 2} })
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(1500 * time.Millisecond) // 15 ticks
	h.Mu.Lock()
	starts := h.Starts
	h.FailStart = nil
	h.Mu.Unlock()
	if starts < 1 || starts > 4 {
		t.Errorf("%d starts in 1.5 s of failing refills, want 1-4 (back-off, not one per tick)", starts)
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.PoolStats()[key] != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the pool did not fill within 10 s of starts working again")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWarmPoolClaimWaitsForRefill: a create that finds its pool empty while
// a refill is in flight takes that refill's sandbox instead of starting a
// cold one beside it.
func TestWarmPoolClaimWaitsForRefill(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := sandboxtest.NewHost()
	h.StartDelay = 300 * time.Millisecond
	// b waits for the refill however long a loaded machine makes it (past
	// the 2 s bound, b started a cold sandbox: 2 failures in 240 runs)
	SetRefillWait(t, time.Minute)
	key := PoolKey{Template: "base", Runtime: "fake"}
	m := newTestManager(t, h, openStore(t, t.TempDir()), func(c *Config) { c.Pools = map[PoolKey]int{key: 1} })
	done := make(chan struct{})
	go func() { m.RunPools(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return m.PoolStats()[key] == 1 })
	a, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// a's hand-over kicked the refill: wait for it to start, so that b
	// finds the pool empty and its refill under way, or (a slow test) the
	// refill landed. A 50 ms sleep here was not always enough on a loaded
	// machine: b found no refill and started a cold sandbox.
	waitFor(t, func() bool { return m.PoolFilling(key) == 1 || m.PoolStats()[key] == 1 })
	b, err := m.Create(ctx, CreateOpts{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	h.Mu.Lock()
	starts := h.Starts
	h.Mu.Unlock()
	if starts != 2 { // the first fill and the refill after a; a cold start for b would make 3
		t.Errorf("%d runtime starts after two creates from a pool of one, want 2 (b should take the refill)", starts)
	}
	if a.ID == b.ID || a.EnvdToken == b.EnvdToken {
		t.Errorf("a and b are not distinct: %+v %+v", a, b)
	}
	_ = m.Kill(context.Background(), a.ID)
	_ = m.Kill(context.Background(), b.ID)
}
