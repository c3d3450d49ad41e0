// Package fake is an in-memory runtime.Runtime for unit tests of the layers
// above the runtime (sandbox manager, API). It keeps the real backends'
// contracts — id validation, ErrNotFound, duplicate ids refused, idempotent
// Delete, re-adoption by a new instance over the same state — and lets tests
// inject failures and simulate a dying init. It never touches the host.
//
// It is never an acceptance test of isolation: that is runtimetest's job.
package fake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"sync"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// ErrInjected is the default error of an injected failure.
var ErrInjected = errors.New("fake runtime: injected failure")

// errNotRunning is returned by Kill on a sandbox whose init has exited.
var errNotRunning = errors.New("fake runtime: sandbox is not running")

// firstPid is above any kernel's pid_max: fake pids never name a real process.
const firstPid = 1 << 23

// Config configures a fake runtime.
type Config struct {
	Name         string               // Runtime.Name; default "fake"
	Capabilities runtime.Capabilities // reported as is; Checkpoint enables Checkpoint/Restore
	CgroupRoot   string               // CgroupPaths returns {"": CgroupRoot/sbx/<id>}; none if empty
}

// state is what several Runtime instances share: the "host".
type state struct {
	mu        sync.Mutex // guards everything below
	sandboxes map[string]*record
	nextPid   int
	failures  map[string][]error // op -> errors returned by the next calls
}

// record is one sandbox as the fake host holds it.
type record struct {
	spec    runtime.Spec
	pid     int
	state   runtime.State
	signals []int
}

// Runtime is the fake backend. Safe for concurrent use.
type Runtime struct {
	cfg Config
	st  *state
}

var (
	_ runtime.Runtime  = (*Runtime)(nil)
	_ runtime.Restorer = (*Runtime)(nil)
)

// New returns a fake runtime with empty state.
func New(cfg Config) *Runtime {
	if cfg.Name == "" {
		cfg.Name = "fake"
	}
	return &Runtime{cfg: cfg, st: &state{sandboxes: map[string]*record{}, nextPid: firstPid, failures: map[string][]error{}}}
}

// Reopen returns a new instance over the same state, as a daemon restarted
// over the same state directory would get.
func (r *Runtime) Reopen() *Runtime { return &Runtime{cfg: r.cfg, st: r.st} }

// Fail makes the next call of op ("create", "load", "list", "state", "kill",
// "delete", "checkpoint", "restore") return err (ErrInjected if nil). Calls
// queue up: Fail twice fails the next two calls.
func (r *Runtime) Fail(op string, err error) {
	if err == nil {
		err = ErrInjected
	}
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	r.st.failures[op] = append(r.st.failures[op], err)
}

// failure pops the next injected error of op. Caller holds st.mu.
func (s *state) failure(op string) error {
	q := s.failures[op]
	if len(q) == 0 {
		return nil
	}
	s.failures[op] = q[1:]
	return fmt.Errorf("%s: %w", op, q[0])
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return r.cfg.Name }

// Capabilities implements runtime.Runtime.
func (r *Runtime) Capabilities() runtime.Capabilities { return r.cfg.Capabilities }

// List implements runtime.Runtime, sorted.
func (r *Runtime) List(context.Context) ([]string, error) {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	if err := r.st.failure("list"); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(r.st.sandboxes))
	for id := range r.st.sandboxes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// Create implements runtime.Runtime: the sandbox is running at once.
func (r *Runtime) Create(_ context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	return r.add("create", spec)
}

// add validates spec and records a running sandbox for it.
func (r *Runtime) add(op string, spec runtime.Spec) (runtime.Sandbox, error) {
	if err := validate(spec); err != nil {
		return nil, err
	}
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	if err := r.st.failure(op); err != nil {
		return nil, err
	}
	if _, ok := r.st.sandboxes[spec.ID]; ok {
		return nil, fmt.Errorf("fake runtime: sandbox %s: %w", spec.ID, fs.ErrExist)
	}
	spec.Args = append([]string(nil), spec.Args...)
	r.st.sandboxes[spec.ID] = &record{spec: spec, pid: r.st.nextPid, state: runtime.StateRunning}
	r.st.nextPid++
	return &Sandbox{r: r, id: spec.ID}, nil
}

// Load implements runtime.Runtime.
func (r *Runtime) Load(_ context.Context, id string) (runtime.Sandbox, error) {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	if err := r.st.failure("load"); err != nil {
		return nil, err
	}
	if _, ok := r.st.sandboxes[id]; !ok {
		return nil, fmt.Errorf("fake runtime: %s: %w", id, runtime.ErrNotFound)
	}
	return &Sandbox{r: r, id: id}, nil
}

func validate(s runtime.Spec) error {
	ok := len(s.ID) > 0 && len(s.ID) <= 64
	for _, c := range s.ID {
		ok = ok && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9')
	}
	switch {
	case !ok:
		return fmt.Errorf("fake runtime: bad sandbox id %q", s.ID)
	case !filepath.IsAbs(s.Rootfs):
		return fmt.Errorf("fake runtime: rootfs %q is not absolute", s.Rootfs)
	case len(s.Args) == 0:
		return errors.New("fake runtime: no init argv")
	}
	return nil
}
