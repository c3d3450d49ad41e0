// Package sandboxtest provides an in-memory host (network, layers, templates,
// runtime) for unit tests of the layers above the runtime. It records what
// exists so tests can assert that nothing leaks. Never used outside tests.
package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// Host is an in-memory network, layer store, template store and runtime,
// recording what exists so tests can assert that nothing leaks.
type Host struct {
	Mu         sync.Mutex
	Nets       map[string]bool
	Layers     map[string]bool
	Running    map[string]bool
	FailStart  error                    // returned by Runtime.Create when set
	Starts     int                      // Runtime.Create calls, failed ones included
	Policies   map[string]egress.Policy // last policy set per network
	FailPolicy error                    // returned by SetPolicy when set
	// RemoveDelay slows every layer Remove (a cleanup stuck on the host).
	RemoveDelay time.Duration
	// StartDelay slows every Runtime.Create, which does not watch its
	// context (a runtime start already under way).
	StartDelay time.Duration
	// FailRemove, when set, is returned by every layer Remove, which then
	// leaves the layer in place (a busy mount).
	FailRemove error
	// FailDelete, when set, is returned by every runtime sandbox Delete,
	// which then leaves it running (runsc delete failing for want of
	// descriptors).
	FailDelete error
	// StartInit, when set, is called by every Runtime.Create for the host
	// pid of the new sandbox's init (a real process the test can kill);
	// otherwise that pid is 1, which never ends.
	StartInit func() int
	Pids      map[string]int // init pid per sandbox started with StartInit
	// FailPause, when set, is returned by every runtime sandbox Pause (a
	// freezer that does not freeze).
	FailPause error
	Frozen    map[string]bool // sandboxes Pause froze and Resume has not thawed
	// Copies records, per SaveUpper, whether its sandbox was frozen then.
	Copies []bool
}

func NewHost() *Host {
	return &Host{Nets: map[string]bool{}, Layers: map[string]bool{}, Running: map[string]bool{}}
}

// Residue describes what still exists, "" when nothing does.
func (h *Host) Residue() string {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if len(h.Nets)+len(h.Layers)+len(h.Running) == 0 {
		return ""
	}
	return fmt.Sprintf("nets=%v layers=%v running=%v", h.Nets, h.Layers, h.Running)
}

// Network.
func (h *Host) Setup(_ context.Context, id string) (sandbox.NetInfo, error) {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	h.Nets[id] = true
	return sandbox.NetInfo{NetNSPath: "/run/netns/" + id, SandboxIP: netip.MustParseAddr("127.0.0.1")}, nil
}
func (h *Host) Lookup(id string) (sandbox.NetInfo, bool) {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	return sandbox.NetInfo{SandboxIP: netip.MustParseAddr("127.0.0.1")}, h.Nets[id]
}
func (h *Host) SetPolicy(_ context.Context, id string, p egress.Policy) error {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if !h.Nets[id] {
		return errors.New("no network " + id)
	}
	if h.FailPolicy != nil {
		return h.FailPolicy
	}
	if h.Policies == nil {
		h.Policies = map[string]egress.Policy{}
	}
	h.Policies[id] = p
	return nil
}
func (h *Host) Teardown(_ context.Context, id string) error {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	delete(h.Nets, id)
	delete(h.Policies, id)
	return nil
}
func (h *Host) List() []string { return keys(&h.Mu, h.Nets) }

// Layers adapts Host to Layers (List has a different signature).
type Layers struct{ h *Host }

// NewLayers returns the layer store of h.
func NewLayers(h *Host) Layers { return Layers{h} }

func (l Layers) Prepare(_ context.Context, id, _ string, _ int64, _ uint32) (string, error) {
	l.h.Mu.Lock()
	defer l.h.Mu.Unlock()
	l.h.Layers[id] = true
	return "/layers/" + id, nil
}
func (l Layers) Rootfs(id string) (string, bool) {
	l.h.Mu.Lock()
	defer l.h.Mu.Unlock()
	return "/layers/" + id, l.h.Layers[id]
}
func (l Layers) Remove(id string) error {
	l.h.Mu.Lock()
	d := l.h.RemoveDelay
	l.h.Mu.Unlock()
	time.Sleep(d)
	l.h.Mu.Lock()
	defer l.h.Mu.Unlock()
	if l.h.FailRemove != nil {
		return l.h.FailRemove
	}
	delete(l.h.Layers, id)
	return nil
}
func (l Layers) List() ([]string, error) { return keys(&l.h.Mu, l.h.Layers), nil }

// SaveUpper writes an empty directory (the fake layer holds no files) and
// records in Host.Copies whether the sandbox was frozen.
func (l Layers) SaveUpper(_ context.Context, id, dst string) error {
	l.h.Mu.Lock()
	l.h.Copies = append(l.h.Copies, l.h.Frozen[id])
	l.h.Mu.Unlock()
	return os.MkdirAll(dst, 0o700)
}

// PrepareFrom is Prepare; the seed is ignored.
func (l Layers) PrepareFrom(ctx context.Context, id, lower string, disk int64, uid uint32, _ string) (string, error) {
	return l.Prepare(ctx, id, lower, disk, uid)
}

type Templates struct{}

// Get knows "base" and "big" (base with memoryMB 1024 of its own, as
// code-interpreter-v1 has).
func (Templates) Get(name string) (sandbox.Template, error) {
	switch name {
	case "base":
		return sandbox.Template{Name: "base", Rootfs: "/t/base", RootfsUserNS: "/t/base-userns"}, nil
	case "big":
		return sandbox.Template{Name: "big", Rootfs: "/t/base", RootfsUserNS: "/t/base-userns", MemoryMB: 1024}, nil
	}
	return sandbox.Template{}, fmt.Errorf("template %q: %w", name, sandbox.ErrNotFound)
}
func (t Templates) List() ([]sandbox.Template, error) {
	b, _ := t.Get("base")
	return []sandbox.Template{b}, nil
}

// Runtime implements runtime.Runtime over Host.running.
type Runtime struct{ h *Host }

// NewRuntime returns the runtime of h.
func NewRuntime(h *Host) Runtime { return Runtime{h} }

func (Runtime) Name() string                       { return "fake" }
func (Runtime) Capabilities() runtime.Capabilities { return runtime.Capabilities{} }
func (r Runtime) Create(_ context.Context, s runtime.Spec) (runtime.Sandbox, error) {
	r.h.Mu.Lock()
	d := r.h.StartDelay
	r.h.Mu.Unlock()
	time.Sleep(d)
	r.h.Mu.Lock()
	defer r.h.Mu.Unlock()
	r.h.Starts++
	if r.h.FailStart != nil {
		return nil, r.h.FailStart
	}
	r.h.Running[s.ID] = true
	if r.h.StartInit != nil {
		if r.h.Pids == nil {
			r.h.Pids = map[string]int{}
		}
		r.h.Pids[s.ID] = r.h.StartInit()
	}
	return rtSandbox{r.h, s.ID}, nil
}
func (r Runtime) Load(_ context.Context, id string) (runtime.Sandbox, error) {
	r.h.Mu.Lock()
	defer r.h.Mu.Unlock()
	if !r.h.Running[id] {
		return nil, fmt.Errorf("%s: %w", id, runtime.ErrNotFound)
	}
	return rtSandbox{r.h, id}, nil
}
func (r Runtime) List(context.Context) ([]string, error) { return keys(&r.h.Mu, r.h.Running), nil }

type rtSandbox struct {
	h  *Host
	id string
}

func (s rtSandbox) ID() string { return s.id }
func (s rtSandbox) Pid() int {
	s.h.Mu.Lock()
	defer s.h.Mu.Unlock()
	if p := s.h.Pids[s.id]; p > 0 {
		return p
	}
	return 1
}
func (s rtSandbox) State(context.Context) (runtime.State, error) {
	s.h.Mu.Lock()
	defer s.h.Mu.Unlock()
	if s.h.Running[s.id] {
		return runtime.StateRunning, nil
	}
	return runtime.StateStopped, errors.New("gone")
}
func (s rtSandbox) Kill(context.Context, syscall.Signal) error { return nil }
func (s rtSandbox) Delete(context.Context) error {
	s.h.Mu.Lock()
	defer s.h.Mu.Unlock()
	if s.h.FailDelete != nil {
		return s.h.FailDelete
	}
	delete(s.h.Running, s.id)
	return nil
}
func (s rtSandbox) CgroupPaths() map[string]string { return nil }

// Pause implements runtime.Pauser: it records the sandbox in Host.Frozen,
// or fails with Host.FailPause.
func (s rtSandbox) Pause(context.Context) error {
	s.h.Mu.Lock()
	defer s.h.Mu.Unlock()
	if s.h.FailPause != nil {
		return s.h.FailPause
	}
	if s.h.Frozen == nil {
		s.h.Frozen = map[string]bool{}
	}
	s.h.Frozen[s.id] = true
	return nil
}

// Resume implements runtime.Pauser.
func (s rtSandbox) Resume(context.Context) error {
	s.h.Mu.Lock()
	defer s.h.Mu.Unlock()
	delete(s.h.Frozen, s.id)
	return nil
}

func keys(mu *sync.Mutex, m map[string]bool) []string {
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
