package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/internal/failpoint"
	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/store"
)

// CreateOpts is a validated create request.
type CreateOpts struct {
	// Team owns the sandbox ("" = the default team). Only its snapshots
	// can be named in Template; its creates queue fairly against others'.
	Team      string
	Template  string
	Runtime   string // "" → template's, then the server default
	Timeout   time.Duration
	Metadata  map[string]string
	EnvVars   map[string]string
	Resources Resources // zero fields → server defaults
	AutoPause bool      // lifecycle.onTimeout "pause": pause at the deadline instead of killing
	// AutoPauseFilesOnly (autoPauseMemory: false) makes that pause keep the
	// files only; it is also the fallback on runtimes without checkpoints.
	AutoPauseFilesOnly bool
	AutoResume         bool // traffic to the paused sandbox resumes it
	AllowNet           *bool
	Network            *store.Network // validated at the API edge; its allowOut/denyOut/egressProxy are the egress policy (NetworkPolicy)
	// PrivateTraffic (network.allowPublicTraffic: false) makes exposed ports
	// require the sandbox's traffic token (e2b-traffic-access-token).
	PrivateTraffic bool
	// Volumes are mounted into the sandbox (validated and resolved by the
	// caller). Such a create never takes a pooled or snapshotted sandbox.
	Volumes []store.VolumeMount
}

// agentMount is where the agent binary appears inside every sandbox.
const agentMount = "/.sbx/sbx-agent"

// Create makes a new running sandbox with its agent initialised. On any error
// everything created so far is released and no record remains.
func (m *Manager) Create(ctx context.Context, o CreateOpts) (Info, error) {
	in, err := m.create(ctx, o)
	if s, ok := m.templates.(Spawner); ok && err == nil {
		s.Spawned(in.TemplateID)
	}
	return in, storageErr(err)
}

func (m *Manager) create(ctx context.Context, o CreateOpts) (_ Info, err error) {
	if err := m.checkNetwork(ctx, o.AllowNet, o.Network); err != nil {
		return Info{}, err
	}
	o.Network = m.sealNetwork(o.Network)
	if snap, ok := m.snapshotFor(ctx, o.Team, o.Template); ok {
		if len(o.Volumes) > 0 {
			return Info{}, fmt.Errorf("%w: volume mounts cannot be used with snapshot %q", ErrInvalid, o.Template)
		}
		return m.createFromSnapshot(ctx, snap, o)
	}
	tmpl, rtName, res, err := m.resolve(o)
	if err != nil {
		return Info{}, err
	}
	t0, pooled := time.Now(), false
	defer func() { m.observer().Created(rtName, pooled, time.Since(t0), err) }()
	if len(o.Volumes) > 0 {
		return m.createWithVolumes(ctx, tmpl, rtName, res, o)
	}
	if in, ok := m.fromTemplateSnapshot(ctx, tmpl, rtName, res, o); ok {
		return in, nil
	}
	if o.AutoPause && !m.runtimes[rtName].Capabilities().Checkpoint {
		// Documented fallback: the files are kept, the processes restart.
		m.log.Info("runtime cannot checkpoint memory: onTimeout pause will keep files only", "runtime", rtName)
		o.AutoPauseFilesOnly = true
	}
	// A warm sandbox costs no runtime start: it takes no create slot and
	// never queues behind cold starts.
	if sb := m.claimOrWait(ctx, tmpl, rtName, res); sb != nil {
		in, err := m.activateClaimed(ctx, sb, o)
		m.kickRefill()
		if err == nil {
			pooled = true
			return in, nil
		}
		m.log.Warn("pooled sandbox failed to activate; creating a fresh one", "sandbox", sb.rec.ID)
	}
	tq := time.Now()
	if err := m.admit(ctx, rtName, o.Team); err != nil {
		return Info{}, err
	}
	defer m.release(rtName)
	m.observer().CreatePhase(rtName, "queue", time.Since(tq))
	sb, err := m.coldStart(ctx, tmpl, rtName, res)
	if errors.Is(err, errAgentStart) && ctx.Err() == nil {
		// Rare: a fresh sandbox whose agent never answers (seen about once
		// in 30 gVisor starts). It was reaped; one fresh attempt, logged.
		m.log.Warn("retrying create once", "err", err)
		sb, err = m.coldStart(ctx, tmpl, rtName, res)
	}
	if err != nil {
		return Info{}, err
	}
	return m.activateTimed(ctx, sb, o)
}

// activateTimed is activate observed as the "init" phase.
func (m *Manager) activateTimed(ctx context.Context, sb *Sandbox, o CreateOpts) (Info, error) {
	t0 := time.Now()
	in, err := m.activate(ctx, sb, o)
	m.observer().CreatePhase(sb.rec.Runtime, "init", time.Since(t0))
	return in, err
}

// activateClaimed is activateTimed on a pooled sandbox, cut short if its
// init dies meanwhile (it may have been dying when claimed): its /init
// would otherwise be retried for seconds before the create starts cold.
func (m *Manager) activateClaimed(ctx context.Context, sb *Sandbox, o CreateOpts) (Info, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	if sb.rt != nil && sb.rt.Pid() > 0 {
		if stop, err := runtime.NotifyExit(sb.rt.Pid(), cancel); err == nil {
			defer stop()
		}
	}
	return m.activateTimed(actx, sb, o)
}

// errAgentStart marks a sandbox whose agent did not answer in time.
var errAgentStart = errors.New("agent did not start")

// coldStart records and starts a new sandbox; on error it is reaped.
func (m *Manager) coldStart(ctx context.Context, tmpl Template, rtName string, res Resources, vols ...store.VolumeMount) (*Sandbox, error) {
	rec := newRecord(tmpl, rtName, res)
	rec.Volumes = vols
	// The record goes first: a daemon killed mid-create finds it and reaps.
	if err := m.store.Put(ctx, &rec); err != nil {
		return nil, fmt.Errorf("create %s: %w", rec.ID, err)
	}
	sb, err := m.start(ctx, &rec, tmpl, res)
	if errors.Is(err, runtime.ErrTimeout) {
		// A hung runtime hangs its cleanup too: answer now, reap behind
		// (the record says "creating" until then; a restart reaps it too).
		go m.reap(context.WithoutCancel(ctx), rec.ID, rec.Runtime, nil)
		return nil, err
	}
	if err != nil {
		m.reap(context.WithoutCancel(ctx), rec.ID, rec.Runtime, nil)
		return nil, err
	}
	return sb, nil
}

// newRecord is the record of a sandbox about to be built (state "creating").
func newRecord(template Template, rtName string, res Resources) store.Sandbox {
	return store.Sandbox{
		ID: NewID(), State: store.StateCreating, TemplateID: template.Name, Build: template.Build, Alias: template.Alias, Runtime: rtName,
		StartedAt: time.Now().UTC(), InitSecret: newToken(), CPUCount: res.CPUCount,
		MemoryMB: res.MemoryMB, DiskSizeMB: res.DiskSizeMB,
	}
}

// activate gives a started sandbox its tenant: identity, token, env vars,
// metadata and deadline (sent to the agent's /init), then registers it as
// running. On error the sandbox is reaped.
func (m *Manager) activate(ctx context.Context, sb *Sandbox, o CreateOpts) (Info, error) {
	now := time.Now().UTC()
	r := &sb.rec
	r.StartedAt, r.EndAt = now, now.Add(o.Timeout)
	r.Metadata, r.EnvVars, r.EnvdToken = o.Metadata, o.EnvVars, newToken()
	r.LifecycleID = newToken()[:16]
	applyLifecycle(r, o)
	r.Team = o.Team
	// Fail closed: no tenant code runs (no /init) before the policy is in
	// the kernel; until then the sandbox's link lets nothing out.
	err := m.policyThenInit(ctx, sb, o)
	t1 := time.Now()
	if err == nil {
		err = m.startCmd(ctx, sb)
	}
	if err != nil {
		m.reap(context.WithoutCancel(ctx), r.ID, r.Runtime, sb.rt)
		return Info{}, err
	}
	in, err := m.register(ctx, sb)
	m.log.Debug("sandbox activated", "sandbox", r.ID, "policy_init", t1.Sub(now), "register", time.Since(t1))
	return in, err
}

// applyLifecycle copies o's network and lifecycle settings into rec and
// mints its traffic token if it asked for private traffic.
func applyLifecycle(rec *store.Sandbox, o CreateOpts) {
	rec.AutoPause, rec.AllowNet, rec.Network = o.AutoPause, o.AllowNet, o.Network
	rec.Persist = store.Persistence{AutoResume: o.AutoResume, TimeoutSec: int64(o.Timeout / time.Second), NoMemory: o.AutoPauseFilesOnly}
	rec.TrafficTok = ""
	if o.PrivateTraffic {
		rec.TrafficTok = newToken()
	}
}

// policyThenInit applies the sandbox's egress policy, then (only if that
// worked) initialises its agent.
func (m *Manager) policyThenInit(ctx context.Context, sb *Sandbox, o CreateOpts) error {
	if err := errors.Join(failpoint.Hit("create/before-policy"), m.applyPolicy(ctx, sb.rec.ID, o.AllowNet, o.Network)); err != nil {
		return err
	}
	return errors.Join(failpoint.Hit("create/before-init"), m.initAgent(ctx, sb))
}

// resolve validates o against templates, runtimes and bounds.
func (m *Manager) resolve(o CreateOpts) (Template, string, Resources, error) {
	tmpl, err := m.templateFor(o.Team, o.Template)
	if err != nil {
		return Template{}, "", Resources{}, err
	}
	rtName := o.Runtime
	if rtName == "" {
		rtName = tmpl.Runtime
	}
	if rtName == "" {
		rtName = m.cfg.DefaultRuntime
	}
	if reason, ok := m.cfg.Unavailable[rtName]; ok {
		return Template{}, "", Resources{}, fmt.Errorf("%w: runtime %.64q is not working on this node: %s", ErrUnavailable, rtName, reason)
	}
	if _, ok := m.runtimes[rtName]; !ok {
		return Template{}, "", Resources{}, fmt.Errorf("%w: runtime %.64q is not available on this node (have %v)", ErrInvalid, rtName, m.RuntimeNames())
	}
	r := o.Resources
	if r.CPUCount == 0 {
		r.CPUCount = tmpl.CPUCount
	}
	if r.MemoryMB == 0 {
		r.MemoryMB = tmpl.MemoryMB
	}
	res, err := m.resources(r)
	return tmpl, rtName, res, err
}

func (m *Manager) resources(r Resources) (Resources, error) {
	pick := func(name string, v, def, max int) (int, error) {
		if v == 0 {
			return def, nil
		}
		if v < 0 || v > max {
			return 0, fmt.Errorf("%w: %s must be between 1 and %d", ErrInvalid, name, max)
		}
		return v, nil
	}
	var err error
	d, mx := m.cfg.Defaults, m.cfg.Max
	out := Resources{Pids: d.Pids}
	if out.CPUCount, err = pick("cpuCount", r.CPUCount, d.CPUCount, mx.CPUCount); err != nil {
		return out, err
	}
	if out.MemoryMB, err = pick("memoryMB", r.MemoryMB, d.MemoryMB, mx.MemoryMB); err != nil {
		return out, err
	}
	if out.DiskSizeMB, err = pick("diskSizeMB", r.DiskSizeMB, d.DiskSizeMB, mx.DiskSizeMB); err != nil {
		return out, err
	}
	if out.MemoryMB < 64 {
		return out, fmt.Errorf("%w: memoryMB must be at least 64", ErrInvalid)
	}
	return out, nil
}

// start prepares network and layer concurrently, starts the runtime and
// waits for the agent to answer. The agent is not initialised yet.
func (m *Manager) start(ctx context.Context, rec *store.Sandbox, tmpl Template, res Resources) (*Sandbox, error) {
	rt := m.runtimes[rec.Runtime]
	caps := rt.Capabilities()
	owner := uint32(0)
	if caps.UserNS {
		owner = m.cfg.UIDBase
	}
	lower, err := tmpl.lower(ctx, caps.UserNS)
	if err != nil {
		return nil, fmt.Errorf("prepare sandbox %s: %w", rec.ID, err)
	}
	t0 := time.Now()
	netCh := make(chan error, 1)
	var ni NetInfo
	obs := m.observer()
	go func() {
		var err error
		ni, err = m.network.Setup(ctx, rec.ID)
		obs.CreatePhase(rec.Runtime, "network", time.Since(t0))
		netCh <- err
	}()
	rootfs, lerr := m.layers.Prepare(ctx, rec.ID, lower, int64(res.DiskSizeMB)<<20, owner)
	obs.CreatePhase(rec.Runtime, "layer", time.Since(t0))
	nerr := <-netCh
	if err := errors.Join(lerr, nerr, failpoint.Hit("create/before-runtime")); err != nil {
		return nil, fmt.Errorf("prepare sandbox %s: %w", rec.ID, err)
	}
	rec.SandboxIP = ni.SandboxIP.String()
	if err := writeResolvConf(rootfs, ni.Gateway); err != nil {
		return nil, fmt.Errorf("prepare sandbox %s: %w", rec.ID, err)
	}
	if err := m.mountVolumes(ctx, rec, caps.UserNS); err != nil {
		return nil, fmt.Errorf("prepare sandbox %s: %w", rec.ID, err)
	}
	spec := m.spec(rec, rootfs, ni, res, caps)
	t1 := time.Now()
	rsb, err := rt.Create(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("start sandbox %s on %s: %w", rec.ID, rec.Runtime, errors.Join(ErrUnavailable, err))
	}
	if err := failpoint.Hit("create/after-runtime"); err != nil {
		return nil, err
	}
	t2 := time.Now()
	obs.CreatePhase(rec.Runtime, "runtime", t2.Sub(t1))
	base := fmt.Sprintf("http://%s:%d", ni.SandboxIP, m.cfg.AgentPort)
	if err := waitHealthy(ctx, base); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w: %w", rec.ID, errAgentStart, errors.Join(ErrUnavailable, err))
	}
	obs.CreatePhase(rec.Runtime, "agent", time.Since(t2))
	m.log.Debug("sandbox started", "sandbox", rec.ID, "runtime", rec.Runtime,
		"prepare", t1.Sub(t0), "runtime_create", t2.Sub(t1), "agent_ready", time.Since(t2))
	return &Sandbox{rec: *rec, rt: rsb, info: ni, tmpl: tmpl}, nil
}

func (m *Manager) spec(rec *store.Sandbox, rootfs string, ni NetInfo, res Resources, caps runtime.Capabilities) runtime.Spec {
	s := runtime.Spec{
		ID: rec.ID, Rootfs: rootfs, NetNSPath: ni.NetNSPath, Hostname: "e2b.local",
		Args: []string{agentMount, "--port", fmt.Sprint(m.cfg.AgentPort)},
		Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"SBX_AGENT_INIT_TOKEN=" + rec.InitSecret, "SBX_SANDBOX_ID=" + rec.ID,
			"SBX_PIDS_LIMIT=" + fmt.Sprint(res.Pids)}, // the agent bounds users' processes below it (gVisor)
		Mounts: append([]runtime.Mount{{Source: m.cfg.AgentBinary, Destination: agentMount, ReadOnly: true}},
			m.volumeBinds(rec, caps.UserNS)...),
		Limits: runtime.Limits{MemoryBytes: int64(res.MemoryMB) << 20, CPUMillis: int64(res.CPUCount) * 1000,
			Pids: int64(res.Pids), NoFile: 4096, DiskBytes: int64(res.DiskSizeMB) << 20},
	}
	if caps.UserNS {
		s.UIDBase = m.cfg.UIDBase
	}
	return s
}

// register records a built sandbox as running and arms its deadline.
func (m *Manager) register(ctx context.Context, sb *Sandbox) (Info, error) {
	if err := failpoint.Hit("create/before-record"); err != nil {
		m.reap(context.WithoutCancel(ctx), sb.rec.ID, sb.rec.Runtime, sb.rt)
		return Info{}, err
	}
	sb.rec.State = store.StateRunning
	if err := m.store.Put(ctx, &sb.rec); err != nil {
		m.reap(context.WithoutCancel(ctx), sb.rec.ID, sb.rec.Runtime, sb.rt)
		return Info{}, fmt.Errorf("record sandbox %s: %w", sb.rec.ID, err)
	}
	m.eventCtx(ctx, sb.rec.ID, "created", "template", sb.rec.TemplateID, "runtime", sb.rec.Runtime, "team", sb.rec.Team)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sandboxes[sb.rec.ID] = sb
	m.armLocked(sb)
	m.watchExit(sb)
	return m.infoLocked(sb), nil
}

// templateOf resolves the template a record runs on: its pinned build if it
// has one (a rebuilt template keeps serving the sandboxes of earlier
// builds), else its template name.
func (m *Manager) templateOf(rec *store.Sandbox) (Template, error) {
	if rec.Build != "" {
		if t, err := m.templates.Get(rec.Build); err == nil {
			return t, nil
		}
	}
	return m.templates.Get(rec.TemplateID)
}
