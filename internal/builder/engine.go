package builder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template/layers"
	"github.com/sbx-dev/sbx/internal/template/oci"
	"golang.org/x/sys/unix"
)

// Spec is E2B's TemplateBuildStartV2: what to build.
type Spec struct {
	FromImage         string        `json:"fromImage,omitempty"`
	FromTemplate      string        `json:"fromTemplate,omitempty"`
	FromImageRegistry *RegistryAuth `json:"fromImageRegistry,omitempty"`
	StartCmd          string        `json:"startCmd,omitempty"`
	ReadyCmd          string        `json:"readyCmd,omitempty"`
	Force             bool          `json:"force,omitempty"`
	Steps             []Step        `json:"steps,omitempty"`
	// MissingBase is a fromTemplate the caller may not build from (none of
	// that name, or another team's): as on E2B (the API's setTemplateSource),
	// the build is accepted and fails at its base step, "base template
	// '<ref>' not found", which the SDK's BuildError puts on fromTemplate.
	MissingBase string `json:"-"`
	// HiddenBase is a fromTemplate of another team's private template named
	// by id or namespace/name (Service.Hidden): the build fails at its base
	// step as E2B's, "you have no access to use '<ref>' as a base template".
	HiddenBase string `json:"-"`
	// BaseName is FromTemplate as the caller wrote it (the API resolves
	// FromTemplate to an id for the builder): the log and errors say it.
	BaseName string `json:"-"`
}

// stored is spec as the build record keeps it: without the registry's
// credentials, which only the pull uses (the database is no secret store).
func (spec Spec) stored() Spec {
	if spec.FromImageRegistry != nil {
		spec.FromImageRegistry = &RegistryAuth{Type: spec.FromImageRegistry.Type, Username: spec.FromImageRegistry.Username}
	}
	return spec
}

// RegistryAuth is E2B's FromImageRegistry; sbx supports type "registry".
type RegistryAuth struct {
	Type     string `json:"type"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// AWS and GCP fields are accepted and refused with a clear error.
	AWSAccessKeyID     string `json:"awsAccessKeyId,omitempty"`
	AWSSecretAccessKey string `json:"awsSecretAccessKey,omitempty"`
	AWSRegion          string `json:"awsRegion,omitempty"`
	ServiceAccountJSON string `json:"serviceAccountJson,omitempty"`
}

// stepError is a build failure attributed to a step (E2B's reason.step).
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// state is a build's position: its layers so far, the cache key of that
// stack, and the defaults accumulated from the image and the steps. cfg is
// what sandboxes get: env from the image and ENV steps, user and workdir
// from USER and WORKDIR steps only (as on E2B, a sandbox's default is
// `user` in its home whatever the image says); run holds the user and
// workdir steps run with, which start as E2B's do: `user` in /home/user
// whatever the image says (docs: template/user-and-workdir; the SDK's
// aptInstall passes user root and its fromDockerfile starts with USER root
// and WORKDIR / for that reason), or a parent template's defaults.
type state struct {
	layers []string
	key    string
	cfg    store.BuildConfig
	run    struct {
		user, workdir string
		workdirSet    bool   // by a WORKDIR step or the parent; else the user's home
		workdirStep   string // the WORKDIR step that set it ("" the parent or none)
		workdirUser   string // the user then, who makes it ("": the step's user)
	}
	// parentStart is the context a start command inherited from the
	// parent template runs in (nil: built on an image or a built-in).
	parentStart *store.StartContext
	// scope is the building template's team ("" for the default team):
	// part of every step's cache key, so that no team's RUN or COPY layer
	// is another team's cache (a layer a team made while a package it
	// installs was malicious would serve every team's identical step, and a
	// CACHED step would tell a team what others have run).
	scope string
}

// runConfig is the configuration a RUN or COPY step runs with.
type runConfig struct {
	store.BuildConfig
	// workdirUser makes a missing Workdir: the user when the WORKDIR step
	// ran, as E2B's WORKDIR step makes it then ("": User).
	workdirUser string
}

// runCfg is the configuration a RUN or COPY step runs with.
func (st *state) runCfg() runConfig {
	c := st.cfg
	c.User, c.Workdir = st.run.user, st.run.workdir
	return runConfig{c, st.run.workdirUser}
}

// stepVersion is part of every step's cache key: bump it when the way steps
// run changes, so no layer made the old way is reused.
const stepVersion = "step/v8" // v8: a COPY without a user is owned by the current user, as E2B's; v7: the workdir is made as its step's user (v6 of two branches merged: both bumped); layers carry no interpreter drivers; ENV values are evaluated

// The user and workdir a build's steps start with, as on E2B.
const (
	stepUser    = "user"
	stepWorkdir = "/home/user"
)

// startRun sets the user and workdir steps start with: a parent's defaults
// where it set them, else E2B's.
func (st *state) startRun(user, workdir string) {
	st.run.user, st.run.workdir, st.run.workdirSet = user, workdir, workdir != ""
	if st.run.user == "" {
		st.run.user = stepUser
	}
	if st.run.workdir == "" {
		st.run.workdir = stepWorkdir
	}
}

func hashKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// execute runs a build to its end; the returned error is the build's reason.
// Every layer it makes or takes from the cache is marked as used by this
// daemon (Layers.Use), so GC can release it later.
func (s *Service) execute(ctx context.Context, b *store.BuildRec, spec Spec, lg *buildLog) (*state, error) {
	scope, err := s.st.TemplateOwner(ctx, b.TemplateID)
	if err != nil {
		return nil, &stepError{"base", err}
	}
	st, err := s.base(ctx, spec, scope, lg)
	if err != nil {
		return nil, &stepError{"base", err}
	}
	st.scope = scope
	if err := s.checkDisk(ctx, b.TemplateID, "base", st.layers); err != nil {
		return nil, err
	}
	force := spec.Force
	for i, step := range spec.Steps {
		name := fmt.Sprint(i + 1)
		force = force || step.Force
		if err := s.step(ctx, b, lg, name, st, step, force); err != nil {
			return nil, &stepError{st.failedStep(name, err), err}
		}
		if err := s.checkDisk(ctx, b.TemplateID, name, st.layers); err != nil {
			return nil, err
		}
	}
	if err := s.finalize(ctx, b, spec, st, lg); err != nil {
		return nil, &stepError{st.failedStep("finalize", err), err}
	}
	return st, nil
}

// baseNotFound is E2B's reason for a fromTemplate it cannot resolve.
func baseNotFound(ref string) error {
	return fmt.Errorf("base template '%s' not found", shortRef(ref))
}

// shortRef is a base reference as a build's reason quotes it: its first
// 64 bytes, then "...".
func shortRef(ref string) string {
	if len(ref) > 64 {
		return ref[:64] + "..."
	}
	return ref
}

// base resolves the build's source into a first state; scope is the
// template's team ("" for the default team).
func (s *Service) base(ctx context.Context, spec Spec, scope string, lg *buildLog) (*state, error) {
	switch {
	case spec.MissingBase != "":
		return nil, baseNotFound(spec.MissingBase)
	case spec.HiddenBase != "":
		return nil, noAccessBase(spec.HiddenBase)
	case spec.FromTemplate != "" && spec.FromImage != "":
		return nil, fmt.Errorf("give fromImage or fromTemplate, not both")
	case spec.FromTemplate != "":
		st, err := s.fromTemplate(spec.FromTemplate, spec.BaseName, lg)
		if err != nil {
			return nil, err
		}
		return st, s.parentHome(ctx, st)
	case spec.FromImage != "":
		return s.fromImage(ctx, spec, scope, lg)
	}
	return nil, fmt.Errorf("a build needs fromImage or fromTemplate")
}

// fromTemplate is the first state of a build on template ref, which the
// caller named name ("": ref); the log and errors use name.
func (s *Service) fromTemplate(ref, name string, lg *buildLog) (*state, error) {
	if name == "" {
		name = ref
	}
	if t, b, err := s.reg.resolveBuild(ref); err == nil {
		lg.add("info", "base", "FROM template %s (%s, build %s)", name, t.ID, b.ID)
		st := &state{layers: append([]string(nil), b.Layers...), key: "build:" + b.ID, cfg: cloneCfg(b.Config)}
		st.cfg.Snapshot = "" // the parent's ready sandbox is not this template's
		st.parentStart = startContextOf(b.Config)
		st.startRun(b.Config.User, b.Config.Workdir)
		return st, nil
	}
	bt, err := s.reg.Builtins.Get(ref)
	if err != nil {
		return nil, baseNotFound(name)
	}
	lg.add("info", "base", "FROM template %s (built in)", ref)
	st := &state{key: bt.Key}
	st.startRun("", "")
	for _, id := range bt.Layers {
		if err := s.push(st, id); err != nil {
			return nil, fmt.Errorf("built-in template %s: %w (rebuild it with: sbx template build %s)", ref, err, ref)
		}
	}
	return st, nil
}

// fromImage pulls spec's image; a team's build (scope not "") pulls only
// from where Config.RegistryGuard allows.
func (s *Service) fromImage(ctx context.Context, spec Spec, scope string, lg *buildLog) (*state, error) {
	var auth *oci.Auth
	if ra := spec.FromImageRegistry; ra != nil {
		if ra.Type != "" && ra.Type != "registry" {
			return nil, fmt.Errorf("registry credentials of type %q are not supported by sbx (use username/password)", ra.Type)
		}
		auth = &oci.Auth{Username: ra.Username, Password: ra.Password}
	}
	lg.add("info", "base", "FROM %s", spec.FromImage)
	p, progress := *s.puller, &lineWriter{log: lg, step: "base", level: "info"}
	p.Log = progress
	if scope != "" {
		p.Guard = s.cfg.RegistryGuard
	}
	img, err := p.Pull(ctx, spec.FromImage, auth, s.reg.Layers)
	progress.flush()
	if err != nil {
		return nil, baseImageHint(spec.FromImage, err)
	}
	st := &state{key: "image:" + img.Digest, cfg: imageConfig(img.Config)}
	st.startRun("", "") // not the image's USER and WORKDIR: E2B's defaults
	for _, k := range img.Layers {
		id, err := layers.ID(k)
		if err != nil {
			return nil, err
		}
		if err := s.push(st, id); err != nil {
			return nil, err
		}
	}
	return st, s.provisionLayer(ctx, st, lg)
}

// push puts layer id on top of st, marked as used by this daemon.
func (s *Service) push(st *state, id string) error {
	if err := s.reg.Layers.Use(id); err != nil {
		return err
	}
	st.layers = append(st.layers, id)
	return nil
}

// imageConfig takes an image's env as the template's.
func imageConfig(c oci.Config) store.BuildConfig {
	cfg := store.BuildConfig{Env: map[string]string{}}
	for _, kv := range c.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			cfg.Env[k] = v
		}
	}
	return cfg
}

func cloneCfg(c store.BuildConfig) store.BuildConfig {
	c.Env = maps.Clone(c.Env)
	if c.StartAs != nil {
		sa := *c.StartAs
		sa.Env = maps.Clone(sa.Env)
		c.StartAs = &sa
	}
	return c
}

// startContextOf is the context c's start command runs in, spelled out: a
// child's sandboxes default to the child's user, workdir and env, so the
// parent's defaults are written as E2B's, `user` in its home ("~"), with
// the parent's env (never nil: nil is a record older than Env).
func startContextOf(c store.BuildConfig) *store.StartContext {
	sc := &store.StartContext{User: orDefault(c.User, stepUser), Workdir: orDefault(c.Workdir, "~"), Env: maps.Clone(c.Env)}
	if c.StartAs != nil { // inherited: the parent's context (its env unless the record is older than Env)
		sc.User, sc.Workdir = c.StartAs.User, c.StartAs.Workdir
		if c.StartAs.Env != nil {
			sc.Env = maps.Clone(c.StartAs.Env)
		}
	}
	if sc.Env == nil {
		sc.Env = map[string]string{}
	}
	return sc
}

// provisionLayer adds the layer every sandbox needs (user, hosts, /.sbx).
func (s *Service) provisionLayer(ctx context.Context, st *state, lg *buildLog) error {
	id, err := provisioned(ctx, s.reg, s.cfg.TmpDir, st, func(f string, a ...any) { lg.add("info", "base", f, a...) })
	if err != nil {
		return err
	}
	return s.push(st, id)
}

// provisioned returns the id of the provisioning layer over st (made
// first if the store lacks it, its view mounted under tmpDir) and moves
// st's key onto it; the caller pushes it.
func provisioned(ctx context.Context, reg *Registry, tmpDir string, st *state, log func(string, ...any)) (string, error) {
	key := hashKey(st.key, provisionVersion)
	id, _ := layers.ID(key)
	if !reg.Layers.Has(id) {
		lower, err := reg.lower(ctx, st.layers, false)
		if err != nil {
			return "", err
		}
		v, err := openView(tmpDir, lower)
		if err != nil {
			return "", err
		}
		defer v.close()
		if _, err := reg.Layers.Ensure(ctx, key, func(dir string) error { return provision(v, dir, log) }); err != nil {
			return "", fmt.Errorf("provision: %w", err)
		}
	}
	st.key = key
	return id, nil
}

// step applies one step to st: metadata steps change the defaults, RUN and
// COPY add a layer (from the cache when its key is there and not forced).
func (s *Service) step(ctx context.Context, b *store.BuildRec, lg *buildLog, name string, st *state, step Step, force bool) error {
	args, _ := json.Marshal(step.Args)
	files := step.FilesHash
	if step.Type == "COPY" { // the files' own digest, never the client's hash alone
		d, err := s.filesDigest(b.TemplateID, step.FilesHash)
		if err != nil {
			return err
		}
		files, step.digest = "sha256:"+d, d
	}
	key := hashKey(st.key, stepVersion, step.Type, string(args), files)
	if st.scope != "" { // the default team's keys are as before
		key = hashKey(key, "team", st.scope)
	}
	if force {
		key = hashKey(key, "force", b.ID)
	}
	lg.add("info", name, "[%s] %s %s", name, step.Type, strings.Join(step.Args, " "))
	switch step.Type {
	case "ENV":
		if st.cfg.Env == nil {
			st.cfg.Env = map[string]string{}
		}
		applyEnv(st.cfg.Env, step.Args)
	case "WORKDIR":
		if len(step.Args) > 0 {
			st.run.workdir = absWorkdir(st.run.workdir, step.Args[0])
			st.cfg.Workdir, st.run.workdirSet, st.run.workdirStep = st.run.workdir, true, name
			st.run.workdirUser = st.run.user
		}
	case "USER":
		if len(step.Args) > 0 {
			return s.userStep(ctx, b, lg, name, st, step, key)
		}
	case "RUN", "COPY":
		if len(step.Args) == 0 {
			return fmt.Errorf("%s needs arguments", step.Type)
		}
		return s.layerStep(ctx, b, lg, name, st, step, key)
	default:
		return fmt.Errorf("unknown step type %q", step.Type)
	}
	st.key = key
	return nil
}

// failedStep is the step a build failing in step name with err is put on:
// the WORKDIR step that set the working directory when err is a failure to
// make it (workdirError), else name.
func (st *state) failedStep(name string, err error) string {
	if we := new(workdirError); errors.As(err, &we) && st.run.workdirStep != "" {
		return st.run.workdirStep
	}
	return name
}

func absWorkdir(cur, dir string) string {
	if strings.HasPrefix(dir, "/") {
		return filepath.Clean(dir)
	}
	if cur == "" {
		cur = "/"
	}
	return filepath.Join(cur, dir)
}

// layerStep runs a RUN or COPY step into a layer, or takes it from the cache.
func (s *Service) layerStep(ctx context.Context, b *store.BuildRec, lg *buildLog, name string, st *state, step Step, key string) error {
	id, _ := layers.ID(key)
	cached := s.reg.Layers.Has(id)
	if s.cfg.OnStep != nil {
		s.cfg.OnStep(cached)
	}
	if cached {
		lg.add("info", name, "CACHED [%s] %s", name, step.Type)
	} else {
		t0 := time.Now()
		_, err := s.reg.Layers.Ensure(ctx, key, func(dir string) error {
			if err := os.Remove(dir); err != nil { // SaveFiles makes it
				return err
			}
			return s.runStep(ctx, b, lg, name, st.layers, st.runCfg(), step, dir)
		})
		if err != nil {
			return err
		}
		lg.add("info", name, "[%s] done in %s", name, time.Since(t0).Round(10*time.Millisecond))
	}
	st.key = key
	return s.push(st, id)
}

// finalize checks the result can serve sandboxes: a shell for commands,
// the working directory, and the start command's readiness.
func (s *Service) finalize(ctx context.Context, b *store.BuildRec, spec Spec, st *state, lg *buildLog) error {
	inheritStart(st, spec, lg)
	if st.cfg.User != "" { // sandboxes' default user by name (USER 1000, USER app:app)
		u, err := s.userName(ctx, st.layers, st.cfg.User)
		if err != nil {
			return err
		}
		st.cfg.User = u
	}
	lower, err := s.reg.lower(ctx, st.layers, false)
	if err != nil {
		return err
	}
	v, err := openView(s.cfg.TmpDir, lower)
	if err != nil {
		return err
	}
	hasBash, wdOK := v.isExecutable("/bin/bash"), true
	if st.cfg.Workdir != "" { // a file there fails the step that makes it, as E2B's setWorkdir
		fi, ok := v.stat(st.cfg.Workdir)
		wdOK = ok && fi.Mode&unix.S_IFMT == unix.S_IFDIR
	}
	v.close()
	if !hasBash {
		return fmt.Errorf("the template has no /bin/bash, which sandbox commands (commands.run) use: install bash in a step (e.g. apk add bash, apt-get install -y bash)")
	}
	if !wdOK {
		if err := s.layerStep(ctx, b, lg, "finalize", st, Step{Type: "RUN", Args: []string{"true"}}, hashKey(st.key, "workdir")); err != nil {
			return err
		}
	}
	if st.cfg.StartCmd != "" || st.cfg.ReadyCmd != "" {
		return s.checkStart(ctx, b, st, lg)
	}
	return nil
}

// inheritStart sets the template's start and ready commands: spec's, run
// as the template's user in its workdir, or, when spec sets neither and
// builds on a template, that template's (st holds the parent's
// configuration), run as its user in its workdir with its env
// (st.parentStart), as E2B's finalize phase takes the start metadata,
// context (user, workdir, env vars) included, of the template it builds
// from.
func inheritStart(st *state, spec Spec, lg *buildLog) {
	if spec.StartCmd == "" && spec.ReadyCmd == "" && spec.FromTemplate != "" {
		if st.cfg.StartCmd != "" || st.cfg.ReadyCmd != "" {
			st.cfg.StartAs = st.parentStart
			lg.add("info", "finalize", "start command of the base template %s kept", orDefault(spec.BaseName, spec.FromTemplate))
		}
		return
	}
	st.cfg.StartCmd, st.cfg.ReadyCmd, st.cfg.StartAs = spec.StartCmd, spec.ReadyCmd, nil
}

// checkStart starts a sandbox of the finished stack (with the resources
// the template's sandboxes get by default), runs the start command and waits for the
// ready command, so a broken start fails the build; then, on a runtime with
// memory checkpoints, snapshots it: sandboxes of the template restore that
// snapshot with the server already running.
func (s *Service) checkStart(ctx context.Context, b *store.BuildRec, st *state, lg *buildLog) error {
	if st.cfg.StartCmd == "" {
		lg.add("info", "finalize", "no start command; waiting for: %s", st.cfg.ReadyCmd)
	} else {
		lg.add("info", "finalize", "start command: %s; waiting for: %s", st.cfg.StartCmd, orDefault(st.cfg.ReadyCmd, "(none)"))
	}
	key := "sbx-build-" + b.ID + "-start"
	t := s.reg.stackTemplate(key, "", st.layers, st.cfg)
	t.CPUCount, t.MemoryMB = b.CPUCount, b.MemoryMB // the snapshot must fit its sandboxes
	t.BuildStep = true                              // no egress CA in the snapshot's files
	s.reg.setTransient(key, &t)
	defer s.reg.setTransient(key, nil)
	t0 := time.Now()
	in, err := s.mgr.Create(ctx, sandbox.CreateOpts{Template: key, Runtime: s.cfg.Runtime, Timeout: 10 * time.Minute,
		Metadata: map[string]string{buildMetaKey: b.ID}})
	if err != nil {
		return fmt.Errorf("start command: %w", err)
	}
	defer func() { _ = s.mgr.Kill(context.WithoutCancel(ctx), in.ID) }()
	lg.add("info", "finalize", "the start command runs and the sandbox is ready (%s)", time.Since(t0).Round(10*time.Millisecond))
	snap, err := s.mgr.SnapshotForBuild(ctx, in.ID, b.TemplateID, b.ID)
	switch {
	case errors.Is(err, sandbox.ErrNotImpl):
		lg.add("info", "finalize", "no memory snapshot on this runtime: each sandbox runs the start command at create")
	case err != nil:
		return fmt.Errorf("snapshot the ready sandbox: %w", err)
	default:
		st.cfg.Snapshot = snap
		lg.add("info", "finalize", "snapshot %s taken: sandboxes start with the start command already running", snap)
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
