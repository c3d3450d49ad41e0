package sandbox

import (
	"context"
	"net/netip"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/store"
)

// Network gives each sandbox its own network namespace and routed link.
// Implementations must be idempotent in Teardown and survive a daemon restart
// (Lookup finds what an earlier process set up). A new network lets nothing
// out until SetPolicy gives it its egress policy, which applies to new
// connections at once and is atomic (on error the previous one holds).
type Network interface {
	Setup(ctx context.Context, id string) (NetInfo, error)
	SetPolicy(ctx context.Context, id string, p egress.Policy) error
	Lookup(id string) (NetInfo, bool)
	Teardown(ctx context.Context, id string) error
	List() []string
}

// NetInfo is where a sandbox lives on the host's side.
type NetInfo struct {
	NetNSPath string
	SandboxIP netip.Addr
	Gateway   netip.Addr // the host side: the sandbox's resolver (invalid: none)
}

// Layers prepares and removes per-sandbox writable root filesystems.
type Layers interface {
	// Prepare mounts a writable layer over lower and returns the rootfs path.
	Prepare(ctx context.Context, id, lower string, diskBytes int64, ownerUID uint32) (rootfs string, err error)
	// Rootfs returns the mounted rootfs of id, if present (after a restart too).
	Rootfs(id string) (string, bool)
	Remove(id string) error
	List() ([]string, error)
	// SaveUpper copies what the sandbox wrote (the overlay's upper layer) to
	// dst, which must not exist. Freeze the sandbox first for a consistent copy.
	SaveUpper(ctx context.Context, id, dst string) error
	// PrepareFrom is Prepare with the upper layer seeded from a SaveUpper copy.
	PrepareFrom(ctx context.Context, id, lower string, diskBytes int64, ownerUID uint32, seed string) (rootfs string, err error)
}

// Template is an immutable root filesystem sandboxes start from, with the
// defaults its sandboxes get.
type Template struct {
	Name         string
	Build        string // the build it resolves to; recorded so resume and restart use the same layers
	Alias        string // its name, when Name is an id
	Rootfs       string // owned by host root (gVisor); one dir or a ':'-joined overlay lower stack
	RootfsUserNS string // shifted to the userns uid range (crun, runc)
	Runtime      string // preferred runtime, "" for the server default
	// Lower, if set, returns the lower stack for a runtime with (userns) or
	// without a user namespace, making shifted copies on first use;
	// Rootfs and RootfsUserNS are then unused.
	Lower func(ctx context.Context, userns bool) (string, error)
	// Env, Workdir and User are the defaults of processes ("" user: "user").
	Env     map[string]string
	Workdir string
	User    string
	// StartCmd, if set, is started (as User, in Workdir) when a sandbox is
	// created, and the create answers once ReadyCmd exits 0 (a ReadyCmd
	// alone is waited for too); as and in StartAs's user and workdir
	// instead, if set (a start command inherited from a base template).
	StartCmd, ReadyCmd string
	StartAs            *store.StartContext
	// CPUCount and MemoryMB, if set, are the resources its sandboxes get
	// when the create asks for none (E2B's template cpuCount/memoryMB).
	CPUCount, MemoryMB int
	// Snapshot, if set, is a snapshot of a ready sandbox of this template
	// that creates restore when runtime and resources match it.
	Snapshot string
	// BuildStep marks the template of a build's sandboxes (its steps' and
	// the one its start command's snapshot is taken of): they get no
	// egress CA (nothing in a build is intercepted, and what they write, a
	// changed CA bundle included, becomes the template's files).
	BuildStep bool
}

// lower returns the template's overlay lower for a runtime.
func (t Template) lower(ctx context.Context, userns bool) (string, error) {
	if t.Lower != nil {
		return t.Lower(ctx, userns)
	}
	if userns {
		return t.RootfsUserNS, nil
	}
	return t.Rootfs, nil
}

// Templates finds templates by name.
type Templates interface {
	Get(name string) (Template, error)
	List() ([]Template, error)
}

// TeamTemplates is implemented by Templates whose names are scoped to
// teams: GetFor resolves ref as team names it (its own template's name,
// another team's public one as "namespace/name", a built-in). Get is then
// the default team's view.
type TeamTemplates interface {
	GetFor(team, ref string) (Template, error)
}

// templateFor resolves a create's template as its team names it.
func (m *Manager) templateFor(team, ref string) (Template, error) {
	if tt, ok := m.templates.(TeamTemplates); ok {
		return tt.GetFor(team, ref)
	}
	return m.templates.Get(ref)
}

// Spawner is implemented by Templates that count the sandboxes created from
// each template (E2B's spawnCount, lastSpawnedAt). Spawned must not block.
type Spawner interface {
	Spawned(templateID string)
}

// Runtimes maps a backend name to its implementation.
type Runtimes map[string]runtime.Runtime
