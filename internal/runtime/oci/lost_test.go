package oci

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/runtime/runtimetest"
)

// TestDeleteLostState: when the runtime lost a sandbox's state (a crash
// between its steps, a wiped --root), Delete still kills the processes and
// removes the cgroups and the bundle.
func TestDeleteLostState(t *testing.T) {
	for _, kind := range []string{"crun", "runc"} {
		t.Run(kind, func(t *testing.T) {
			r, err := New(kind, Config{StateDir: t.TempDir()})
			if err != nil {
				t.Skip(err)
			}
			fx := runtimetest.NewFixture(t)
			s, rootfs := fx.Spec(t, r, "echo END > /var/tmp/ready; exec sleep 1000", runtime.Limits{})
			sb, err := r.Create(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sb.Delete(context.Background()) })
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(rootfs, "var/tmp/ready")); err == nil {
					break
				}
			}
			if err := os.RemoveAll(filepath.Join(r.root, s.ID)); err != nil {
				t.Fatal(err)
			}
			if err := sb.Delete(context.Background()); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			runtimetest.CheckNoResidue(t, r, sb, rootfs)
		})
	}
}
