package oci

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/runtime/runtimetest"
)

func conformance(t *testing.T, kind string) {
	state := t.TempDir()
	// runsc keeps a bind-mounted null netns under its root; release it.
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(state, "runsc", "null-netns"), unix.MNT_DETACH) })
	newRuntime := func(t *testing.T) runtime.Runtime {
		r, err := New(kind, Config{StateDir: state})
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI: %v", err)
			}
			t.Skip(err)
		}
		return r
	}
	runtimetest.Run(t, newRuntime)
}

func TestConformanceRunsc(t *testing.T) { conformance(t, "runsc") }
func TestConformanceCrun(t *testing.T)  { conformance(t, "crun") }
func TestConformanceRunc(t *testing.T)  { conformance(t, "runc") }
