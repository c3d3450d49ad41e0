package store

import (
	"errors"
	"fmt"
)

// State is where a sandbox record is in its life. It is stored as its
// String(); Put refuses, and Get and List fail with ErrBadState on, a
// record in any state not listed here. E2B's wire "state" (running or
// paused) is derived from it in one place, internal/api (wireState).
type State string

// The states of a sandbox record.
const (
	// StateCreating is recorded before anything is built, so a daemon
	// killed mid-create finds the record and reaps what was made.
	StateCreating State = "creating"
	// StatePooled is a warm pool's started sandbox no request owns yet;
	// a restart reaps it.
	StatePooled State = "pooled"
	// StateRunning is a live sandbox serving its tenant.
	StateRunning State = "running"
	// StatePausing is a running sandbox whose image is being written; it
	// is the in-memory state only (the record stays "running").
	StatePausing State = "pausing"
	// StatePaused has an image on disk and no host resources.
	StatePaused State = "paused"
	// StateResuming is a paused sandbox on shared storage that its node
	// is restoring: taken (Transition from paused) before anything runs, so
	// no other node can take the record over (ClaimPaused wants paused)
	// while this one may be running it. A node lost meanwhile loses it.
	StateResuming State = "resuming"
	// StateReaping is a sandbox whose release failed part-way; the next
	// Recover retries it.
	StateReaping State = "reaping"
	// StateLost is a cluster node's sandbox whose node's lease expired
	// (ExpireNodes): presumed gone with its node. The node, registering
	// again, finds it so and its Recover reaps what still runs of it.
	StateLost State = "lost"
)

// ErrBadState is returned (wrapped) for a state that is none of the above.
var ErrBadState = errors.New("store: unknown sandbox state")

// ParseState returns the State named s, or an error wrapping ErrBadState.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case StateCreating, StatePooled, StateRunning, StatePausing, StatePaused, StateResuming, StateReaping, StateLost:
		return st, nil
	}
	return "", fmt.Errorf("%w %q", ErrBadState, s)
}

// String returns the state's name, as stored.
func (s State) String() string { return string(s) }
