package sandbox

import (
	"context"
	"time"

	"github.com/sbx-dev/sbx/internal/reqid"
)

// Observer receives the manager's measurements (internal/metrics implements
// it). Calls are synchronous, from the operation's goroutine, and must not
// block or allocate per call; labels are bounded (runtime names, fixed
// phase and operation names, never sandbox ids).
type Observer interface {
	// CreatePhase is one phase of a create: "queue" (admission wait),
	// "layer", "network", "runtime", "agent" (until it answers), "init"
	// (tenant setup and /init).
	CreatePhase(runtime, phase string, d time.Duration)
	// Created is a finished create; pooled tells a warm-pool claim.
	Created(runtime string, pooled bool, d time.Duration, err error)
	// Lifecycle is a finished pause, resume, fork or snapshot.
	Lifecycle(op, runtime string, d time.Duration, err error)
	// Refused is a create refused by admission (node full or queue full).
	Refused(reason string)
	// PoolClaim is a create that looked in a warm pool (hit: it got one).
	PoolClaim(template, runtime string, hit bool)
	// PoolRefill is a pool refill that finished.
	PoolRefill(template, runtime string, err error)
	// PauseRefused is an autoPause sandbox's deadline pause refused for
	// want of disk (cause: team_disk_quota, image_quota, no_space):
	// deferred (it runs on and the pause is retried), or not (its retries
	// are over: it is killed).
	PauseRefused(cause string, deferred bool)
	// Died is a sandbox (running or pooled) reaped because its init ended
	// without the daemon asking: the agent exited, the runtime was killed.
	Died(runtime string)
}

// SetObserver installs o (before serving; nil: none).
func (m *Manager) SetObserver(o Observer) {
	if o == nil {
		o = nopObserver{}
	}
	m.obs = o
}

// observer returns the installed observer or one that does nothing.
func (m *Manager) observer() Observer {
	if m.obs == nil {
		return nopObserver{}
	}
	return m.obs
}

// AdmissionStats is the admission state at one instant.
type AdmissionStats struct {
	Creating, Queued, Active int
}

// Admission reports creates in flight, creates queued and sandboxes
// holding host resources (for gauges read at scrape time).
func (m *Manager) Admission() AdmissionStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return AdmissionStats{Creating: m.creating, Queued: m.waiting, Active: m.activeLocked()}
}

// eventCtx is event with the id of the API request that caused it (when
// ctx carries one), so audit records of one request can be joined.
func (m *Manager) eventCtx(ctx context.Context, id, what string, kv ...string) {
	if rid := reqid.From(ctx); rid != "" {
		kv = append(kv, "request_id", rid)
	}
	m.event(id, what, kv...)
}

type nopObserver struct{}

func (nopObserver) CreatePhase(string, string, time.Duration)      {}
func (nopObserver) Created(string, bool, time.Duration, error)     {}
func (nopObserver) Lifecycle(string, string, time.Duration, error) {}
func (nopObserver) Refused(string)                                 {}
func (nopObserver) PoolClaim(string, string, bool)                 {}
func (nopObserver) PoolRefill(string, string, error)               {}
func (nopObserver) PauseRefused(string, bool)                      {}
func (nopObserver) Died(string)                                    {}
