// Package sandbox is the lifecycle manager of one node: it creates sandboxes
// from templates on a runtime backend, enforces their deadlines, kills them,
// and re-adopts or reaps them after a daemon restart. Processes and files are
// not its business: those go through the agent inside each sandbox.
package sandbox

import (
	"context"
	"fmt"
	"golang.org/x/sync/semaphore"
	"log/slog"
	"maps"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/store"
)

// Config holds the node's defaults and bounds.
type Config struct {
	DefaultRuntime string
	AgentBinary    string // host path of sbx-agent, bind-mounted read-only
	AgentPort      int    // default 49983
	// EgressCA is the PEM certificate of the egress interception CA; /init
	// gives it to every sandbox's agent, which installs it in the
	// sandbox's trust stores. Empty: none.
	EgressCA       []byte
	UIDBase        uint32 // host uid of sandbox root on userns backends
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	Defaults       Resources       // limits when a request does not set them
	Max            Resources       // upper bounds a request may ask for
	MaxSandboxes   int             // running + creating; beyond → ErrBusy
	MaxCreating    int             // concurrent creates in flight; more wait in a queue
	MaxQueued      int             // creates waiting for a slot; beyond → ErrBusy (0 = none wait)
	AdmitWait      time.Duration   // longest wait for a slot before ErrBusy (0 = 30 s)
	ReapRetry      time.Duration   // first wait before a reap short of descriptors is retried (0 = 1 s; retryReap)
	Domain         string          // returned as "domain" (nil when empty)
	Pools          map[PoolKey]int // warm pool sizes; see pool.go
	Audit          Auditor         // lifecycle records; may be nil
	Events         EventSink       // lifecycle events for sandbox logs; may be nil
	// ImagesDir holds paused sandboxes' images, snapshots and fork scratch
	// (see images.go); "" disables pause, fork and snapshots.
	ImagesDir string
	// SharedDir, when set, holds paused images and snapshots instead of
	// ImagesDir (same layout): storage every node of a cluster mounts (NFS
	// in production), so a paused sandbox resumes, and a snapshot starts
	// sandboxes, on any of them (see moved.go). StorageID is the id the
	// storage holds (the same on every node), recorded with each image.
	SharedDir, StorageID string
	// ImageQuota bounds the disk used by paused images and snapshots in
	// bytes; 0 means no bound. Past it, pause and snapshot get ErrQuota.
	ImageQuota int64
	// PauseRetry is the first wait before the deadline's pause of an
	// autoPause sandbox, refused for want of disk (its team's quota, the
	// image quota, a full disk), is tried again; it doubles up to 8 times
	// that (0 = 30 s; pauseretry.go).
	PauseRetry time.Duration
	// PauseRetryFor bounds how long past its deadline such a sandbox runs
	// on: then it is killed, as a sandbox whose pause fails otherwise is
	// (0 = MaxTimeout, the longest a caller could have extended it by).
	PauseRetryFor time.Duration
	// Unavailable lists runtimes this node knows but could not open, with
	// the reason: creates asking for them get ErrUnavailable (503), and
	// Health reports them.
	Unavailable map[string]string
	// ProxyCheck validates a create's or update's egress proxy (where it
	// may be: see socks.Dialer.Check) before anything is built; nil: this
	// node tunnels through no proxy, and asking for one is ErrNotImpl.
	ProxyCheck func(ctx context.Context, p egress.Proxy) error
	// ProxySealer, when set, seals egress proxy passwords in records
	// (secrets.Sealer: the key is not in the database); nil: stored as sent.
	ProxySealer Sealer
}

// Auditor records lifecycle events (implemented by *audit.Log).
type Auditor interface {
	Append(kind, sandbox, actor string, fields map[string]string) error
}

// EventSink receives lifecycle events (created, killed, paused, resumed,
// ...) with their fields; implemented by *telemetry.Store. It must not block.
type EventSink interface {
	Event(id, what string, fields map[string]string)
}

// EventDrainer is an EventSink that also reads a sandbox's agent events
// (at agentURL, with the sandbox's access token) just before the sandbox
// is killed, so its last commands' ends are not lost. It returns when ctx
// ends at the latest.
type EventDrainer interface {
	EventSink
	Drain(ctx context.Context, id, agentURL, token string)
}

// event writes a lifecycle audit record, if auditing is on, and passes the
// event to the sink, if any.
func (m *Manager) event(id, what string, kv ...string) {
	f := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		f[kv[i]] = kv[i+1]
	}
	if m.cfg.Events != nil {
		m.cfg.Events.Event(id, what, maps.Clone(f))
	}
	if m.cfg.Audit == nil {
		return
	}
	f["event"] = what
	if err := m.cfg.Audit.Append("sandbox", id, "", f); err != nil {
		m.log.Error("audit", "err", err)
	}
}

// Resources are the per-sandbox limits.
type Resources struct {
	CPUCount   int
	MemoryMB   int
	DiskSizeMB int
	Pids       int
}

// Manager owns every sandbox of the node. mu guards sandboxes; a sandbox's
// rec, rt and info are written holding both its op lock and mu (once it is
// in sandboxes), so either lock suffices to read them. Runtime calls happen
// outside mu.
type Manager struct {
	cfg       Config
	store     *store.Store
	runtimes  Runtimes
	network   Network
	layers    Layers
	templates Templates
	volumes   Volumes   // nil: no volumes on this node
	diskAdmit DiskAdmit // nil: pauses are bounded by the image quota only
	log       *slog.Logger

	mu         sync.Mutex
	sandboxes  map[string]*Sandbox
	creating   int                 // creates holding a slot
	waiting    int                 // creates queued for a slot
	slots      *semaphore.Weighted // MaxCreating create slots (admit.go); nil = unlimited
	slotsUsed  int64               // slots held by starts in flight
	fair       fairQueue           // starts waiting for slots, per team (fair.go); under mu
	closed     bool
	pools      map[PoolKey]*pool
	refillKick chan struct{} // a claim wakes RunPools (buffered 1)
	deathKick  chan struct{} // a watched init's end wakes RunWatchdog (buffered 1)
	exited     exitSet       // the inits the next wake looks at (watchdog.go)
	unwatched  atomic.Bool   // an init could not be watched: the watchdog sweeps often

	health healthCache // has its own lock, see health.go
	obs    Observer    // SetObserver; nil: none
}

// Sandbox is the manager's live view of one sandbox.
type Sandbox struct {
	rec   store.Sandbox
	rt    runtime.Sandbox // nil while paused
	info  NetInfo
	timer *time.Timer
	due   time.Time     // the deadline, on the monotonic clock (armAtLocked); guarded by Manager.mu
	done  chan struct{} // closed when the sandbox is killed or paused
	// op serialises lifecycle operations on this sandbox (pause, resume,
	// fork, snapshot, kill). Take it without holding Manager.mu.
	op     sync.Mutex
	frozen bool         // capture froze it; guarded by op
	tmpl   Template     // what it was started from (defaults for /init); set before it is shared
	epoch  int          // resumes so far; guarded by Manager.mu
	agent  *http.Client // kept connection to the agent from pooling to the claim's /init (preinit.go); owner only
	// pauseTries counts the deadline's pauses refused in a row (the
	// retry's backoff; pauseretry.go); guarded by op.
	pauseTries int
	// pauseTriedAt is when the last of them was refused; nudgeArmed: a
	// try started by freed disk is scheduled (DiskFreed). Guarded by
	// Manager.mu.
	pauseTriedAt time.Time
	nudgeArmed   bool
}

// Info is a snapshot of a sandbox for callers (API, proxy).
type Info struct {
	store.Sandbox
	AgentAddr string          // host:port of the agent
	Epoch     int             // bumped by every resume: connections to an earlier epoch are dead
	Done      <-chan struct{} // closed when the sandbox ends; proxies cancel its streams
}

// New returns a manager. Call Recover before serving requests.
func New(cfg Config, st *store.Store, rts Runtimes, nw Network, ly Layers, tm Templates, log *slog.Logger) (*Manager, error) {
	if _, ok := rts[cfg.DefaultRuntime]; !ok {
		return nil, fmt.Errorf("default runtime %q: %w", cfg.DefaultRuntime, ErrUnavailable)
	}
	if cfg.AgentPort == 0 {
		cfg.AgentPort = 49983
	}
	m := &Manager{cfg: cfg, store: st, runtimes: rts, network: nw, layers: ly, templates: tm,
		log: log, sandboxes: map[string]*Sandbox{}, refillKick: make(chan struct{}, 1),
		deathKick: make(chan struct{}, 1)}
	if cfg.MaxCreating > 0 {
		m.slots = semaphore.NewWeighted(int64(cfg.MaxCreating))
	}
	return m, nil
}

// Config returns the manager's configuration.
func (m *Manager) Config() Config { return m.cfg }

// RuntimeNames lists the configured backends.
func (m *Manager) RuntimeNames() []string {
	names := make([]string, 0, len(m.runtimes))
	for n := range m.runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Templates returns the template source.
func (m *Manager) Templates() Templates { return m.templates }

// Get returns a snapshot of a live sandbox.
func (m *Manager) Get(id string) (Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, ok := m.sandboxes[id]
	if !ok {
		return Info{}, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	return m.infoLocked(sb), nil
}

// List returns snapshots of every live sandbox, newest first.
func (m *Manager) List() []Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Info, 0, len(m.sandboxes))
	for _, sb := range m.sandboxes {
		out = append(out, m.infoLocked(sb))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.After(out[j].StartedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (m *Manager) infoLocked(sb *Sandbox) Info {
	if sb.done == nil {
		sb.done = make(chan struct{})
	}
	in := Info{Sandbox: sb.rec, Done: sb.done, Epoch: sb.epoch}
	if sb.info.SandboxIP.IsValid() {
		in.AgentAddr = fmt.Sprintf("%s:%d", sb.info.SandboxIP, m.cfg.AgentPort)
	}
	return in
}

// RuntimeSandbox returns the backend handle of a live sandbox (for metrics).
func (m *Manager) RuntimeSandbox(id string) (runtime.Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, ok := m.sandboxes[id]
	if !ok || sb.rt == nil {
		return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	return sb.rt, nil
}

// Close stops deadline timers; running sandboxes keep running (they are
// re-adopted by the next daemon).
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, sb := range m.sandboxes {
		if sb.timer != nil {
			sb.timer.Stop()
		}
	}
}
