package fake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// Sandbox is a handle on a fake sandbox; handles from Create and Load of
// the same id share its state.
type Sandbox struct {
	r  *Runtime
	id string
}

var _ runtime.Checkpointer = (*Sandbox)(nil)

// with runs f on the sandbox's record under the state lock after popping an
// injected failure of op; a deleted sandbox is ErrNotFound.
func (s *Sandbox) with(op string, f func(*record) error) error {
	st := s.r.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.failure(op); err != nil {
		return err
	}
	rec, ok := st.sandboxes[s.id]
	if !ok {
		return fmt.Errorf("fake runtime: %s: %w", s.id, runtime.ErrNotFound)
	}
	return f(rec)
}

// ID implements runtime.Sandbox.
func (s *Sandbox) ID() string { return s.id }

// Pid implements runtime.Sandbox: a number no real process has, 0 once the
// init has exited or the sandbox is deleted.
func (s *Sandbox) Pid() int {
	pid := 0
	_ = s.with("", func(rec *record) error {
		if rec.state != runtime.StateStopped {
			pid = rec.pid
		}
		return nil
	})
	return pid
}

// State implements runtime.Sandbox.
func (s *Sandbox) State(context.Context) (runtime.State, error) {
	st := runtime.StateStopped
	err := s.with("state", func(rec *record) error { st = rec.state; return nil })
	return st, err
}

// Kill implements runtime.Sandbox: the signal is recorded (Signals); SIGKILL,
// SIGTERM and SIGINT stop the sandbox. A stopped sandbox cannot be signalled.
func (s *Sandbox) Kill(_ context.Context, sig syscall.Signal) error {
	return s.with("kill", func(rec *record) error {
		if rec.state == runtime.StateStopped {
			return fmt.Errorf("fake runtime: %s: %w", s.id, errNotRunning)
		}
		rec.signals = append(rec.signals, int(sig))
		if sig == syscall.SIGKILL || sig == syscall.SIGTERM || sig == syscall.SIGINT {
			rec.state = runtime.StateStopped
		}
		return nil
	})
}

// Delete implements runtime.Sandbox; idempotent.
func (s *Sandbox) Delete(context.Context) error {
	st := s.r.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.failure("delete"); err != nil {
		return err
	}
	delete(st.sandboxes, s.id)
	return nil
}

// CgroupPaths implements runtime.Sandbox.
func (s *Sandbox) CgroupPaths() map[string]string {
	if s.r.cfg.CgroupRoot == "" {
		return map[string]string{}
	}
	return map[string]string{"": filepath.Join(s.r.cfg.CgroupRoot, "sbx", s.id)}
}

// imageFile is the file a fake checkpoint writes into its image dir.
const imageFile = "fake-checkpoint"

// Checkpoint implements runtime.Checkpointer when Capabilities.Checkpoint is
// set: it writes a marker into imageDir and, unless leaveRunning, stops the
// sandbox.
func (s *Sandbox) Checkpoint(_ context.Context, imageDir string, leaveRunning bool) error {
	if !s.r.cfg.Capabilities.Checkpoint {
		return fmt.Errorf("fake runtime %s: no checkpoint capability", s.r.cfg.Name)
	}
	return s.with("checkpoint", func(rec *record) error {
		if rec.state != runtime.StateRunning {
			return fmt.Errorf("fake runtime: checkpoint %s: %w", s.id, errNotRunning)
		}
		if err := os.MkdirAll(imageDir, 0o700); err != nil {
			return fmt.Errorf("fake runtime: %w", err)
		}
		if err := os.WriteFile(filepath.Join(imageDir, imageFile), []byte(s.id), 0o600); err != nil {
			return fmt.Errorf("fake runtime: %w", err)
		}
		if !leaveRunning {
			rec.state = runtime.StateStopped
		}
		return nil
	})
}

// Restore implements runtime.Restorer when Capabilities.Checkpoint is set:
// imageDir must hold a fake checkpoint.
func (r *Runtime) Restore(_ context.Context, spec runtime.Spec, imageDir string) (runtime.Sandbox, error) {
	if !r.cfg.Capabilities.Checkpoint {
		return nil, fmt.Errorf("fake runtime %s: no checkpoint capability", r.cfg.Name)
	}
	if _, err := os.Stat(filepath.Join(imageDir, imageFile)); err != nil {
		return nil, fmt.Errorf("fake runtime: checkpoint image: %w", err)
	}
	return r.add("restore", spec)
}
