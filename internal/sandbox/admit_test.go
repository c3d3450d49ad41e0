package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
)

// TestAdmissionQueue: creates beyond MaxCreating wait for a slot instead of
// failing; beyond MaxQueued they fail at once with ErrBusy; a cancelled or
// timed-out waiter leaves the queue; MaxSandboxes counts queued creates.
func TestAdmissionQueue(t *testing.T) {
	m := &Manager{cfg: Config{MaxCreating: 1, MaxQueued: 1, AdmitWait: time.Minute}, sandboxes: map[string]*Sandbox{}}
	m.slots = semaphore.NewWeighted(1)
	bg := context.Background()
	if err := m.admit(bg, "crun", ""); err != nil { // in flight
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() { queued <- m.admit(bg, "crun", "") }()
	for m.count() != [2]int{1, 1} {
		time.Sleep(time.Millisecond)
	}
	if err := m.admit(bg, "crun", ""); !errors.Is(err, ErrBusy) {
		t.Fatalf("queue full: %v, want ErrBusy", err)
	}
	m.release("crun") // the in-flight create ends: the queued one proceeds
	if err := <-queued; err != nil {
		t.Fatalf("queued create: %v", err)
	}
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if err := m.admit(ctx, "crun", ""); !errors.Is(err, ErrBusy) {
		t.Fatalf("cancelled waiter: %v, want ErrBusy", err)
	}
	m.cfg.AdmitWait = 10 * time.Millisecond
	if err := m.admit(bg, "crun", ""); !errors.Is(err, ErrBusy) {
		t.Fatalf("timed-out waiter: %v, want ErrBusy", err)
	}
	if got := m.count(); got != [2]int{1, 0} {
		t.Fatalf("creating, waiting = %v, want [1 0]", got)
	}
	m.release("crun")
	m.cfg.MaxSandboxes = 1
	if err := m.admit(bg, "crun", ""); err != nil {
		t.Fatal(err)
	}
	if err := m.admit(bg, "crun", ""); !errors.Is(err, ErrBusy) {
		t.Fatalf("over MaxSandboxes: %v, want ErrBusy", err)
	}
}

func (m *Manager) count() [2]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return [2]int{m.creating, m.waiting}
}

// TestAdmissionCost: a start takes its runtime's create cost in slots (a
// runsc start two), so fewer costly starts run at once; a cheaper start
// behind it waits its turn (first come first served).
func TestAdmissionCost(t *testing.T) {
	m := &Manager{cfg: Config{MaxCreating: 2, MaxQueued: 4, AdmitWait: time.Minute}, sandboxes: map[string]*Sandbox{}}
	m.slots = semaphore.NewWeighted(2)
	bg := context.Background()
	if err := m.admit(bg, "runsc", ""); err != nil { // takes both slots
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- m.admit(bg, "crun", "") }()
	select {
	case err := <-got:
		t.Fatalf("crun start admitted beside a runsc one on 2 slots: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	m.release("runsc")
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if m.slotsUsed != 1 {
		t.Fatalf("slots used = %d, want 1", m.slotsUsed)
	}
	m.release("crun")
	m.cfg.MaxCreating = 1 // a cost above the slots is capped, not a deadlock
	m.slots = semaphore.NewWeighted(1)
	if err := m.admit(bg, "runsc", ""); err != nil {
		t.Fatal(err)
	}
	m.release("runsc")
}
