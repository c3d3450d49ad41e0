package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// fakeHost is an in-memory network, layer store, template store and runtime,
// recording what exists so tests can assert that nothing leaks.
type fakeHost struct {
	mu        sync.Mutex
	nets      map[string]bool
	layers    map[string]bool
	running   map[string]bool
	failStart error
}

func newFakeHost() *fakeHost {
	return &fakeHost{nets: map[string]bool{}, layers: map[string]bool{}, running: map[string]bool{}}
}

func (h *fakeHost) residue() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.nets)+len(h.layers)+len(h.running) == 0 {
		return ""
	}
	return fmt.Sprintf("nets=%v layers=%v running=%v", h.nets, h.layers, h.running)
}

// Network.
func (h *fakeHost) Setup(_ context.Context, id string) (NetInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nets[id] = true
	return NetInfo{NetNSPath: "/run/netns/" + id, SandboxIP: netip.MustParseAddr("127.0.0.1")}, nil
}
func (h *fakeHost) Lookup(id string) (NetInfo, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return NetInfo{SandboxIP: netip.MustParseAddr("127.0.0.1")}, h.nets[id]
}
func (h *fakeHost) Teardown(_ context.Context, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.nets, id)
	return nil
}
func (h *fakeHost) List() []string { return keys(&h.mu, h.nets) }

// fakeLayers adapts fakeHost to Layers (List has a different signature).
type fakeLayers struct{ h *fakeHost }

func (l fakeLayers) Prepare(_ context.Context, id, _ string, _ int64, _ uint32) (string, error) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	l.h.layers[id] = true
	return "/layers/" + id, nil
}
func (l fakeLayers) Rootfs(id string) (string, bool) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return "/layers/" + id, l.h.layers[id]
}
func (l fakeLayers) Remove(id string) error {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	delete(l.h.layers, id)
	return nil
}
func (l fakeLayers) List() ([]string, error) { return keys(&l.h.mu, l.h.layers), nil }

type fakeTemplates struct{}

func (fakeTemplates) Get(name string) (Template, error) {
	if name != "base" {
		return Template{}, fmt.Errorf("template %q: %w", name, ErrNotFound)
	}
	return Template{Name: "base", Rootfs: "/t/base", RootfsUserNS: "/t/base-userns"}, nil
}
func (t fakeTemplates) List() ([]Template, error) {
	b, _ := t.Get("base")
	return []Template{b}, nil
}

// fakeRuntime implements runtime.Runtime over fakeHost.running.
type fakeRuntime struct{ h *fakeHost }

func (fakeRuntime) Name() string                       { return "fake" }
func (fakeRuntime) Capabilities() runtime.Capabilities { return runtime.Capabilities{} }
func (r fakeRuntime) Create(_ context.Context, s runtime.Spec) (runtime.Sandbox, error) {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	if r.h.failStart != nil {
		return nil, r.h.failStart
	}
	r.h.running[s.ID] = true
	return fakeSandbox{r.h, s.ID}, nil
}
func (r fakeRuntime) Load(_ context.Context, id string) (runtime.Sandbox, error) {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	if !r.h.running[id] {
		return nil, fmt.Errorf("%s: %w", id, runtime.ErrNotFound)
	}
	return fakeSandbox{r.h, id}, nil
}
func (r fakeRuntime) List(context.Context) ([]string, error) { return keys(&r.h.mu, r.h.running), nil }

type fakeSandbox struct {
	h  *fakeHost
	id string
}

func (s fakeSandbox) ID() string { return s.id }
func (s fakeSandbox) Pid() int   { return 1 }
func (s fakeSandbox) State(context.Context) (runtime.State, error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if s.h.running[s.id] {
		return runtime.StateRunning, nil
	}
	return runtime.StateStopped, errors.New("gone")
}
func (s fakeSandbox) Kill(context.Context, syscall.Signal) error { return nil }
func (s fakeSandbox) Delete(context.Context) error {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	delete(s.h.running, s.id)
	return nil
}
func (s fakeSandbox) CgroupPaths() map[string]string { return nil }

func keys(mu *sync.Mutex, m map[string]bool) []string {
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
