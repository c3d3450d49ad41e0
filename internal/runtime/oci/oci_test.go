package oci

import (
	"os"
	"testing"

	"github.com/sbx-dev/sbx/internal/runtime"
	"github.com/sbx-dev/sbx/internal/runtime/runtimetest"
)

func conformance(t *testing.T, kind string) {
	state := t.TempDir()
	newRuntime := func(t *testing.T) runtime.Runtime {
		r, err := New(kind, testConfig(kind, state))
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI: %v", err)
			}
			t.Skip(err)
		}
		return r
	}
	// runsc pins a null netns under its root (shared by every instance).
	first := newRuntime(t)
	t.Cleanup(func() { first.(*Runtime).Close() })
	runtimetest.Run(t, newRuntime, runtimetest.NewFixture(t))
}

func TestConformanceRunsc(t *testing.T) { conformance(t, "runsc") }
func TestConformanceCrun(t *testing.T)  { conformance(t, "crun") }
func TestConformanceRunc(t *testing.T)  { conformance(t, "runc") }
