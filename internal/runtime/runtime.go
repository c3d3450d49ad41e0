// Package runtime defines the boundary between the sandbox manager and the
// isolation backends (gVisor runsc, crun, runc; a microVM later).
//
// A backend only manages lifecycle: it turns a prepared root filesystem, a
// network namespace and a set of limits into a running, isolated init process
// (the sbx-agent). Processes and files always go through the agent protocol,
// identically for every backend. Optional abilities (checkpoint, restore) are
// separate interfaces found by type assertion.
package runtime

import (
	"context"
	"errors"
	"syscall"
)

// ErrNotFound is returned (wrapped) when a sandbox is unknown to a backend.
var ErrNotFound = errors.New("runtime: sandbox not found")

// ErrUnavailable is returned (wrapped) when a backend cannot run at all on this
// host (binary missing, unsupported kernel feature).
var ErrUnavailable = errors.New("runtime: backend unavailable")

// ErrTimeout is returned (wrapped) when a runtime command did not finish in
// its time bound: the binary hangs, and cleaning up with it will too.
var ErrTimeout = errors.New("runtime: command timed out")

// Capabilities describes what a backend can do beyond the core lifecycle.
type Capabilities struct {
	Checkpoint bool // memory checkpoint/restore (pause with memory, fork)
	UserNS     bool // sandbox root is mapped to an unprivileged host uid range
	// OwnKernel: the sandbox runs its own kernel (gVisor's Sentry) with its
	// own page and dentry caches, which start cold: a pooled sandbox is
	// worth warming before it is offered.
	OwnKernel bool
}

// Limits are enforced by the kernel (cgroups, rlimits). Zero means "backend default".
type Limits struct {
	MemoryBytes int64 // hard memory limit (OOM kills inside the sandbox only)
	CPUMillis   int64 // CPU quota in millicores (1000 = one core)
	Pids        int64 // max number of tasks (HostPids: what the host cgroup holds)
	NoFile      uint64
	// DiskBytes is the size of the sandbox's writable layer (a host tmpfs,
	// internal/layer), whose pages the host charges to the memory cgroup of
	// whoever writes them. A backend whose writer is not the guest (runsc:
	// the Sentry) lets its cgroup hold that much more so that files count
	// against the disk quota, not the memory limit. 0: none.
	DiskBytes int64
}

// sentryThreads is what the host pids cgroup of a gVisor sandbox holds past
// twice its tasks: the Sentry's and the gofer's own threads.
const sentryThreads = 64

// HostPids is the limit of the host pids cgroup of a sandbox of runtime name
// runtime whose tasks may number pids. It is pids itself where the host
// kernel runs the tasks. Under gVisor ("runsc") every guest thread is a host
// stub thread, a running one may hold a Sentry thread too (a task goroutine
// waiting on its stub blocks an OS thread), and the Sentry and the gofer have
// threads of their own: at the host limit the Sentry's Go runtime cannot
// start a thread and the whole sandbox dies (a fork bomb under load did,
// with a limit of pids). So the host holds 2×pids + sentryThreads, and the
// guest's tasks are bounded inside (RLIMIT_NPROC per user, cmd/sbx-agent
// nproc.go).
func HostPids(name string, pids int64) int64 {
	if name != "runsc" || pids <= 0 {
		return pids
	}
	return 2*pids + sentryThreads
}

// Mount is an extra bind mount into the sandbox.
type Mount struct {
	Source, Destination string
	ReadOnly            bool
}

// Spec is everything a backend needs to create a sandbox.
type Spec struct {
	ID        string   // sandbox id, [a-z0-9]{20}
	Rootfs    string   // absolute path of the prepared, writable root filesystem
	NetNSPath string   // network namespace the sandbox joins (e.g. /run/netns/sbx-<id>)
	Hostname  string   // hostname inside the sandbox
	Args      []string // init process argv (the agent)
	Env       []string // init process environment, KEY=VALUE
	Mounts    []Mount
	Limits    Limits
	// UIDBase is the first host uid of the 65536-wide range that sandbox uid 0
	// maps to, for backends with Capabilities.UserNS. The rootfs must already be
	// owned by that range.
	UIDBase uint32
}

// State is the coarse state of a sandbox as the backend sees it.
type State string

const (
	StateCreated State = "created"
	StateRunning State = "running"
	StatePaused  State = "paused"
	StateStopped State = "stopped"
)

// Runtime is one isolation backend. Implementations are safe for concurrent use.
type Runtime interface {
	Name() string
	Capabilities() Capabilities
	// Create creates and starts the sandbox's init process. On error nothing
	// created by the backend is left behind, except after ErrTimeout (the
	// binary hangs, and so would its cleanup): then the caller must Delete
	// what Load finds, when it can.
	Create(ctx context.Context, spec Spec) (Sandbox, error)
	// Load re-adopts a sandbox created earlier (e.g. before a daemon restart).
	// It returns an error wrapping ErrNotFound if the backend has no such sandbox.
	Load(ctx context.Context, id string) (Sandbox, error)
	// List returns the ids of every sandbox the backend knows, in any state.
	List(ctx context.Context) ([]string, error)
}

// StrayReaper is implemented by backends that can end a sandbox whose
// runtime state is gone (a data dir deleted by hand) from what the host
// still holds of it: its cgroups.
type StrayReaper interface {
	// Strays lists the ids of sandboxes that hold host cgroups this daemon
	// can prove are its own, whatever state the backend has for them.
	Strays(ctx context.Context) ([]string, error)
	// ReapStray kills every process in id's cgroups and removes them. It is
	// idempotent: an id with no cgroup is nothing to do.
	ReapStray(ctx context.Context, id string) error
}

// Sandbox is one sandbox of a backend.
type Sandbox interface {
	ID() string
	// Pid is the host pid of the sandbox's init process (0 if not running).
	Pid() int
	State(ctx context.Context) (State, error)
	// Kill sends sig to every process of the sandbox.
	Kill(ctx context.Context, sig syscall.Signal) error
	// Delete stops the sandbox if needed and releases everything the backend
	// holds for it (runtime state, cgroups). It is idempotent.
	Delete(ctx context.Context) error
	// CgroupPaths returns the host cgroup directories holding the sandbox's
	// processes, keyed by controller ("" for a unified cgroup v2 path), for metrics.
	CgroupPaths() map[string]string
}

// ConsoleTailer is implemented by sandboxes whose runtime keeps a console
// log on the host (the runtime's and, for gVisor, the Sentry's own output;
// not the guest's): its last n bytes, for the log when a sandbox dies.
type ConsoleTailer interface {
	ConsoleTail(n int) []byte
}

// Checkpointer is implemented by sandboxes whose backend can save and restore
// memory state (gVisor).
type Checkpointer interface {
	Checkpoint(ctx context.Context, imageDir string, leaveRunning bool) error
}

// Restorer is implemented by runtimes that can start a sandbox from an image
// written by Checkpointer.Checkpoint (resume after pause, fork). The spec
// must describe the same root filesystem contents and mounts; its ID may
// differ from the checkpointed sandbox's.
type Restorer interface {
	Restore(ctx context.Context, spec Spec, imageDir string) (Sandbox, error)
}

// Pauser is implemented by sandboxes whose backend can freeze every process
// in place and thaw them again (no memory leaves the host). The manager uses
// it to hold a sandbox still while its memory image and writable layer are
// captured, so that both describe the same instant.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}
