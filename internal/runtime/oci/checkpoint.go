package oci

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sbx-dev/sbx/internal/runtime"
)

var (
	_ runtime.Checkpointer = (*Sandbox)(nil)
	_ runtime.Restorer     = (*Runtime)(nil)
	_ runtime.Pauser       = (*Sandbox)(nil)
)

// errNoCheckpoint is returned by backends without memory checkpoints.
var errNoCheckpoint = errors.New("checkpoint/restore needs the runsc backend")

// Checkpoint implements runtime.Checkpointer (runsc only): it saves the
// sandbox's whole memory and kernel state into imageDir (created if needed).
// Unless leaveRunning, the sandbox stops once the image is complete; Delete
// still has to release it.
func (s *Sandbox) Checkpoint(ctx context.Context, imageDir string, leaveRunning bool) error {
	if s.r.kind != "runsc" {
		return fmt.Errorf("oci %s: %w", s.r.kind, errNoCheckpoint)
	}
	if err := os.MkdirAll(imageDir, 0o700); err != nil {
		return fmt.Errorf("oci: checkpoint image dir: %w", err)
	}
	args := []string{"checkpoint", "--image-path", imageDir}
	if leaveRunning {
		args = append(args, "--leave-running")
	}
	_, err := s.r.run(ctx, s.id, append(args, s.id)...)
	return err
}

// Restore implements runtime.Restorer (runsc only): it starts a new sandbox
// from spec whose memory and processes come from the image a Checkpoint
// wrote. spec must describe the same rootfs contents and mounts as the
// checkpointed sandbox; its ID may differ (a fork). On error nothing is left.
func (r *Runtime) Restore(ctx context.Context, spec runtime.Spec, imageDir string) (runtime.Sandbox, error) {
	if r.kind != "runsc" {
		return nil, fmt.Errorf("oci %s: %w", r.kind, errNoCheckpoint)
	}
	if _, err := os.Stat(imageDir); err != nil {
		return nil, fmt.Errorf("oci: checkpoint image: %w", err)
	}
	return r.start(ctx, spec, []string{"restore", "--detach", "--image-path", imageDir})
}

// Pause implements runtime.Pauser: `<runtime> pause` freezes every process
// of the sandbox (runsc stops its kernel; crun and runc use the freezer).
// runsc can checkpoint a paused sandbox, which stays paused afterwards.
func (s *Sandbox) Pause(ctx context.Context) error {
	_, err := s.r.run(ctx, s.id, "pause", s.id)
	return err
}

// Resume implements runtime.Pauser.
func (s *Sandbox) Resume(ctx context.Context) error {
	_, err := s.r.run(ctx, s.id, "resume", s.id)
	return err
}
