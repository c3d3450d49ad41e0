package runtimetest

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// killProbe: the init traps TERM (PID 1 ignores signals it has no handler
// for) and waits on a child; a signal to every process kills the child and
// wakes the init.
const killProbe = `trap 'echo TERM END > /var/tmp/term; exec sleep 1000' TERM
sleep 1000 & echo ready END > /var/tmp/ready; wait; echo child-died >> /var/tmp/term2; sleep 1000`

// testKill: Kill delivers a catchable signal to the init and its children;
// SIGKILL stops the sandbox.
func testKill(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	ctx := context.Background()
	s, rootfs := fx.spec(t, rt, killProbe, runtime.Limits{})
	sb := create(t, rt, s)
	waitFile(t, rootfs, "var/tmp/ready", 10*time.Second)
	if err := sb.Kill(ctx, syscall.SIGTERM); err != nil {
		t.Fatalf("Kill(TERM): %v", err)
	}
	waitFile(t, rootfs, "var/tmp/term", 10*time.Second)
	if err := sb.Kill(ctx, syscall.SIGKILL); err != nil {
		t.Fatalf("Kill(KILL): %v", err)
	}
	var st runtime.State
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st, _ = sb.State(ctx); st == runtime.StateStopped {
			return
		}
	}
	t.Fatalf("State after SIGKILL = %s, want stopped", st)
}
