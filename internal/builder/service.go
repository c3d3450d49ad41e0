// Package builder builds templates the way E2B does: a build request names
// a template, its COPY files are uploaded by hash, then the build starts
// from an OCI image (or another template), provisions what sandboxes need,
// and runs each step inside a sandbox (gVisor), keeping each step's result
// as a content-addressed layer keyed by its parent and the step, so an
// unchanged step is never run again. A ready build is a stack of layers
// that sandboxes mount as their overlay's lower directories (Registry).
package builder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/layer"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template/oci"
)

// buildMetaKey marks a build's own sandboxes (metadata), so lists hide them
// and a restart removes them.
const buildMetaKey = "sbx.build"

// IsBuildSandbox reports whether a sandbox's metadata marks it as a build's.
func IsBuildSandbox(md map[string]string) bool { _, ok := md[buildMetaKey]; return ok }

// maxPending bounds builds running or waiting at once (each holds a log and
// a goroutine); more are refused with 429. A team other than the default
// one may hold at most maxTeamPending of them, so that no team can fill the
// queue for all (the team's own --team-max-builds quota may be lower).
const (
	maxPending     = 64
	maxTeamPending = maxPending / 2
)

// Config sets a Service up.
type Config struct {
	DataDir        string        // build logs and uploads live under it
	TmpDir         string        // scratch mounts (views of layer stacks)
	Runtime        string        // runtime of build sandboxes: runsc (no user namespace, layers stay unshifted)
	MaxConcurrent  int           // builds at once (default 2); more wait ("waiting")
	StepTimeout    time.Duration // bound of one step (default 30 min)
	MaxUploadBytes int64         // bound of one upload (default 512 MiB)
	CPUCount       int           // default build sandbox resources
	MemoryMB       int
	DiskSizeMB     int
	// QuotaBytes bounds the disk of template layers and uploads (0: none):
	// a build that starts past it fails with a clear reason.
	QuotaBytes int64
	// ShiftLayers makes the user-namespace copies of a ready build's layers
	// in the background (crun/runc are configured), so the first sandbox of
	// a template on them does not wait for the copy.
	ShiftLayers bool
	// GCGrace is how long a layer no build references is kept (default
	// DefaultGCGrace).
	GCGrace time.Duration
	// RegistryGuard bounds where a build of a team other than the default
	// one pulls its image from (oci.Puller.Guard; nil: anywhere): not the
	// host's or its network's private services.
	RegistryGuard *egress.Ranges
	// OnBuild observes each finished build and OnStep each layer step
	// (cached: taken from the layer cache) for metrics; nil: none.
	OnBuild func(d time.Duration, err error)
	OnStep  func(cached bool)
}

// Service is the template build API over a Registry and a Manager.
// mu guards logs, cancels and teams; names serialises template creation.
type Service struct {
	cfg    Config
	reg    *Registry
	mgr    *sandbox.Manager
	st     *store.Store
	puller *oci.Puller
	log    *slog.Logger
	slots  *fairSlots // builds at once (MaxConcurrent), round robin across teams

	mu      sync.Mutex
	logs    map[string]*buildLog
	cancels map[string]context.CancelFunc
	teams   map[string]string // build id → its template's team ("" default), while pending
	names   sync.Mutex
	wg      sync.WaitGroup
	bg      context.Context // background work (preshift); Close cancels it
	stopBG  context.CancelFunc

	diskCheck DiskCheck // SetDiskCheck; nil: none
}

// New returns a Service. Call Recover before serving.
func New(cfg Config, reg *Registry, mgr *sandbox.Manager, st *store.Store, p *oci.Puller, log *slog.Logger) *Service {
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 2
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = 30 * time.Minute
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = 512 << 20
	}
	if cfg.Runtime == "" {
		cfg.Runtime = "runsc"
	}
	if cfg.GCGrace == 0 {
		cfg.GCGrace = DefaultGCGrace
	}
	bg, stop := context.WithCancel(context.Background())
	return &Service{cfg: cfg, reg: reg, mgr: mgr, st: st, puller: p, log: log, bg: bg, stopBG: stop,
		slots: newFairSlots(cfg.MaxConcurrent), logs: map[string]*buildLog{}, cancels: map[string]context.CancelFunc{},
		teams: map[string]string{}}
}

// Recover runs at start: builds a killed daemon left unfinished fail (with
// a reason), their sandboxes and scratch are removed, interrupted layer
// writes are dropped, and the registry is loaded.
func (s *Service) Recover(ctx context.Context) error {
	if err := errors.Join(layer.CleanupMatching(s.cfg.TmpDir, func(string) bool { return true }), ensureDir(s.cfg.TmpDir), s.reg.Layers.RemoveStale()); err != nil {
		return err
	}
	bs, err := s.st.OwnBuilds(ctx) // on a cluster, other nodes' builds are theirs to fail
	if err != nil {
		return err
	}
	for _, b := range bs {
		if b.Status == "building" || b.Status == "waiting" {
			b.Status, b.Reason, b.UpdatedAt = "error", "the daemon restarted during the build; start it again", time.Now().UTC()
			if err := s.st.PutBuild(ctx, b); err != nil {
				return err
			}
		}
	}
	for _, in := range s.mgr.List() {
		if IsBuildSandbox(in.Metadata) {
			_ = s.mgr.Kill(ctx, in.ID)
		}
	}
	if err := s.reg.Reload(ctx); err != nil {
		return err
	}
	_, err = s.GC(ctx)
	return err
}

// Close cancels running builds and background work and waits for them.
func (s *Service) Close() {
	s.stopBG()
	s.mu.Lock()
	for _, c := range s.cancels {
		c()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.flushSpawns(context.Background())
}

func (s *Service) logDir() string { return filepath.Join(s.cfg.DataDir, "builds") }

// StartBuild starts build buildID of templateID with spec (E2B's
// POST /v2/templates/{templateID}/builds/{buildID}).
func (s *Service) StartBuild(ctx context.Context, templateID, buildID string, spec Spec) error {
	b, err := s.st.Build(ctx, buildID)
	if err != nil || b.TemplateID != templateID {
		return sandbox.NotFound("build %.64q of template %.64q not found", buildID, templateID)
	}
	if b.Status != "waiting" || len(b.Spec) > 0 {
		return fmt.Errorf("%w: build %s was already started", sandbox.ErrConflict, buildID)
	}
	if err := validateSpec(spec); err != nil {
		return err
	}
	team, err := s.st.TemplateOwner(ctx, templateID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	n, mine := len(s.cancels), s.pendingOf(team)
	s.mu.Unlock()
	if n >= maxPending {
		return fmt.Errorf("%w: %d builds are running or waiting; try again later", sandbox.ErrBusy, n)
	}
	if team != "" && mine >= maxTeamPending {
		return fmt.Errorf("%w: the team has %d builds running or waiting; try again later", sandbox.ErrBusy, mine)
	}
	b.Spec, _ = json.Marshal(spec.stored())
	b.UpdatedAt = time.Now().UTC()
	if err := s.st.PutBuild(ctx, b); err != nil {
		return err
	}
	lg, err := openLog(s.logDir(), b.ID)
	if err != nil {
		return err
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.mu.Lock()
	s.logs[b.ID], s.cancels[b.ID], s.teams[b.ID] = lg, cancel, team
	s.mu.Unlock()
	s.wg.Add(1)
	go s.run(bctx, b, team, spec, lg)
	return nil
}

// pendingOf counts team's builds running or waiting. s.mu must be held.
func (s *Service) pendingOf(team string) int {
	n := 0
	for _, t := range s.teams {
		if t == team {
			n++
		}
	}
	return n
}

func validateSpec(spec Spec) error {
	if (spec.FromImage == "") == (spec.FromTemplate == "" && spec.MissingBase == "" && spec.HiddenBase == "") {
		return fmt.Errorf("%w: exactly one of fromImage and fromTemplate must be given", sandbox.ErrInvalid)
	}
	if len(spec.Steps) > 200 {
		return fmt.Errorf("%w: at most 200 steps", sandbox.ErrInvalid)
	}
	for i, st := range spec.Steps {
		switch st.Type {
		case "RUN", "COPY", "ENV", "WORKDIR", "USER":
		default:
			return fmt.Errorf("%w: step %d: unknown type %.64q (RUN, COPY, ENV, WORKDIR, USER)", sandbox.ErrInvalid, i+1, st.Type)
		}
		if st.Type == "COPY" && !validHash(st.FilesHash) {
			return fmt.Errorf("%w: step %d: COPY needs the filesHash of its uploaded files", sandbox.ErrInvalid, i+1)
		}
	}
	return nil
}

// run waits for a build slot, executes the build and records its end.
func (s *Service) run(ctx context.Context, b *store.BuildRec, team string, spec Spec, lg *buildLog) {
	defer s.wg.Done()
	defer func() {
		lg.close()
		s.mu.Lock()
		s.cancels[b.ID]()
		delete(s.cancels, b.ID)
		delete(s.teams, b.ID)
		delete(s.logs, b.ID) // complete on disk
		s.mu.Unlock()
	}()
	if err := s.slots.acquire(ctx, team); err != nil {
		s.finish(b, nil, err, lg)
		return
	}
	defer s.slots.release()
	b.Status, b.UpdatedAt = "building", time.Now().UTC()
	if err := s.st.PutBuild(context.WithoutCancel(ctx), b); err == nil {
		_ = s.reg.Reload(context.WithoutCancel(ctx))
	}
	t0 := time.Now()
	var st *state
	err := s.checkQuota()
	if err == nil {
		err = s.checkDisk(ctx, b.TemplateID, "base", nil)
	}
	if err == nil {
		st, err = s.execute(ctx, b, spec, lg)
	}
	if err == nil {
		err = s.pushRemote(ctx, b, st, lg)
	}
	if err == nil {
		lg.add("info", "finalize", "build finished in %s", time.Since(t0).Round(10*time.Millisecond))
	}
	if s.cfg.OnBuild != nil {
		s.cfg.OnBuild(time.Since(t0), err)
	}
	s.finish(b, st, err, lg)
}

// finish records a build's outcome; a ready build becomes the template's
// "latest" (and gets the tags it was requested with).
func (s *Service) finish(b *store.BuildRec, st *state, err error, lg *buildLog) {
	ctx := context.Background()
	now := time.Now().UTC()
	b.UpdatedAt, b.FinishedAt = now, now
	if err != nil {
		b.Status, b.Reason = "error", printableLine(reasonText(err), 8<<10)
		var se *stepError
		if errors.As(err, &se) {
			b.ReasonStep = se.step
		}
		lg.add("error", b.ReasonStep, "build failed: %s", b.Reason)
		b.LogBytes = lg.size()
		if perr := s.st.PutBuild(ctx, b); perr != nil {
			s.log.Error("record failed build", "build", b.ID, "err", perr)
		}
		_ = s.reg.Reload(ctx)
		return
	}
	// Tags first: they resolve only once the build is ready, and status
	// answers from the registry's index, so "ready" is seen only when the
	// template can be used.
	if dropped := s.putReadyTags(ctx, b, now); len(dropped) > 0 {
		lg.add("warn", "finalize", "not tagged %v: a template holds at most %d tags", dropped, MaxTagsPerTemplate)
	}
	b.Status, b.Layers, b.Config, b.LogBytes = "ready", st.layers, st.cfg, lg.size()
	b.LayerSizes = s.layerSizes(st.layers)
	if perr := s.st.PutBuild(ctx, b); perr != nil {
		s.log.Error("record build", "build", b.ID, "err", perr)
		return
	}
	_ = s.reg.Reload(ctx)
	if s.cfg.ShiftLayers {
		s.wg.Add(1)
		go s.preshift(b.ID, b.Layers)
	}
}

// preshift makes the user-namespace copies of layers (errors are logged: a
// create makes a missing copy itself).
func (s *Service) preshift(build string, ls []string) {
	defer s.wg.Done()
	for _, l := range ls {
		if _, err := s.reg.Layers.EnsureUserNS(s.bg, l); err != nil && s.bg.Err() == nil {
			s.log.Warn("user-namespace copy of a template layer", "build", build, "layer", l, "err", err)
			return
		}
	}
}

// logsOf returns a build's log entries (in memory, else from disk).
func (s *Service) logsOf(buildID string) []LogEntry {
	s.mu.Lock()
	lg := s.logs[buildID]
	s.mu.Unlock()
	if lg != nil {
		return lg.snapshot()
	}
	return readLog(s.logDir(), buildID)
}

// Usage returns the bytes held by template layers (their user-namespace
// copies included: layers.Store.DiskSize).
func (s *Service) Usage() int64 {
	ids, _ := s.reg.Layers.List()
	var n int64
	for _, id := range ids {
		n += s.reg.Layers.DiskSize(id)
	}
	return n
}

func (s *Service) checkQuota() error {
	if s.cfg.QuotaBytes <= 0 {
		return nil
	}
	if u := s.Usage(); u >= s.cfg.QuotaBytes {
		return &stepError{"base", fmt.Errorf("%w: template layers use %d MiB of the %d MiB quota (--template-quota-mb); delete templates to free space", sandbox.ErrQuota, u>>20, s.cfg.QuotaBytes>>20)}
	}
	return nil
}

func newID() string { return uuid.NewString() }

// ensureDir makes dir (0700).
func ensureDir(dir string) error { return os.MkdirAll(dir, 0o700) }
