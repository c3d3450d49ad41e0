package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAdmissionQueue: creates beyond MaxCreating wait for a slot instead of
// failing; beyond MaxQueued they fail at once with ErrBusy; a cancelled or
// timed-out waiter leaves the queue; MaxSandboxes counts queued creates.
func TestAdmissionQueue(t *testing.T) {
	m := &Manager{cfg: Config{MaxCreating: 1, MaxQueued: 1, AdmitWait: time.Minute}, sandboxes: map[string]*Sandbox{}}
	m.slots = make(chan struct{}, 1)
	bg := context.Background()
	if err := m.admit(bg); err != nil { // in flight
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() { queued <- m.admit(bg) }()
	for m.count() != [2]int{1, 1} {
		time.Sleep(time.Millisecond)
	}
	if err := m.admit(bg); !errors.Is(err, ErrBusy) {
		t.Fatalf("queue full: %v, want ErrBusy", err)
	}
	m.release() // the in-flight create ends: the queued one proceeds
	if err := <-queued; err != nil {
		t.Fatalf("queued create: %v", err)
	}
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if err := m.admit(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("cancelled waiter: %v, want ErrBusy", err)
	}
	m.cfg.AdmitWait = 10 * time.Millisecond
	if err := m.admit(bg); !errors.Is(err, ErrBusy) {
		t.Fatalf("timed-out waiter: %v, want ErrBusy", err)
	}
	if got := m.count(); got != [2]int{1, 0} {
		t.Fatalf("creating, waiting = %v, want [1 0]", got)
	}
	m.release()
	m.cfg.MaxSandboxes = 1
	if err := m.admit(bg); err != nil {
		t.Fatal(err)
	}
	if err := m.admit(bg); !errors.Is(err, ErrBusy) {
		t.Fatalf("over MaxSandboxes: %v, want ErrBusy", err)
	}
}

func (m *Manager) count() [2]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return [2]int{m.creating, m.waiting}
}
