package runtimetest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// counter keeps a count in shell memory and writes it out: after a restore
// the count goes on from where it was, never from 1.
const counter = `i=0; while :; do i=$((i+1)); echo $i > /var/tmp/n.tmp; mv /var/tmp/n.tmp /var/tmp/n; sleep 0.05; done`

// testCheckpoint: on backends with Capabilities.Checkpoint, a sandbox
// checkpointed (and stopped) then restored continues with its memory.
func testCheckpoint(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	if !rt.Capabilities().Checkpoint {
		t.Skip(rt.Name() + " has no checkpoint")
	}
	ctx := context.Background()
	s, rootfs := fx.spec(t, rt, counter, runtime.Limits{})
	sb := create(t, rt, s) // its cleanup also checks the restored one's residue
	waitCount(t, rootfs, 5)
	img := t.TempDir()
	start := time.Now()
	if err := sb.(runtime.Checkpointer).Checkpoint(ctx, img, false); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	t.Logf("checkpoint: %s", time.Since(start))
	before := readCount(rootfs)
	if err := sb.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	restored, err := rt.(runtime.Restorer).Restore(ctx, s, img)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	t.Logf("restore: %s", time.Since(start))
	t.Cleanup(func() { restored.Delete(context.Background()) })
	waitCount(t, rootfs, before+5)
}

func readCount(rootfs string) int {
	b, _ := os.ReadFile(filepath.Join(rootfs, "var/tmp/n"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// waitCount waits until the counter reaches at least n, and fails if it
// ever restarts from below n-5 (memory lost).
func waitCount(t *testing.T, rootfs string, n int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c := readCount(rootfs)
		if c >= n {
			return
		}
		if c > 0 && c < n-10 && n > 10 {
			t.Fatalf("counter at %d, want >= %d: memory not restored", c, n)
		}
	}
	t.Fatalf("counter at %d, never reached %d", readCount(rootfs), n)
}
