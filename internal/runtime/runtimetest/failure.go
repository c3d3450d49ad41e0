package runtimetest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// testInvalid: bad specs fail with an error and leave nothing behind.
func testInvalid(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	good, rootfs := fx.spec(t, rt, "exec sleep 1000", runtime.Limits{})
	for _, tc := range []struct {
		name string
		edit func(s *runtime.Spec)
	}{
		{"bad id", func(s *runtime.Spec) { s.ID = "../../etc" }},
		{"empty id", func(s *runtime.Spec) { s.ID = "" }},
		{"relative rootfs", func(s *runtime.Spec) { s.Rootfs = "rootfs" }},
		{"missing rootfs", func(s *runtime.Spec) { s.Rootfs = filepath.Join(t.TempDir(), "nope") }},
		{"no argv", func(s *runtime.Spec) { s.Args = nil }},
		{"missing init binary", func(s *runtime.Spec) { s.Args = []string{"/no/such/init"} }},
		{"missing netns", func(s *runtime.Spec) { s.NetNSPath = "/run/netns/sbx-does-not-exist" }},
		{"relative mount", func(s *runtime.Spec) { s.Mounts = []runtime.Mount{{Source: "x", Destination: "/x"}} }},
		{"negative memory", func(s *runtime.Spec) { s.Limits.MemoryBytes = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			s.ID = newID()
			tc.edit(&s)
			sb, err := rt.Create(context.Background(), s)
			if err == nil {
				sb.Delete(context.Background())
				t.Fatalf("Create succeeded")
			}
			t.Logf("error: %v", err)
			if ids, _ := rt.List(context.Background()); slices.Contains(ids, s.ID) && s.ID != "" {
				t.Errorf("failed Create left %s known: %v", s.ID, ids)
			}
			for _, p := range cgroupDirs(s.ID) {
				t.Errorf("cgroup left: %s", p)
			}
			if s.ID == "" {
				return
			}
			if left := lingering(s.ID, rootfs); len(left) > 0 { // crun run --detach's child may still be exiting
				t.Errorf("processes left: %v", left)
			}
		})
	}
}

// testDuplicate: creating an id that exists fails and leaves the running
// sandbox alone.
func testDuplicate(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	ctx := context.Background()
	s, rootfs := fx.spec(t, rt, "echo up END > /var/tmp/ready; exec sleep 1000", runtime.Limits{})
	sb := create(t, rt, s)
	waitFile(t, rootfs, "var/tmp/ready", 10*time.Second)
	if dup, err := rt.Create(ctx, s); err == nil {
		dup.Delete(ctx)
		t.Fatal("second Create with the same id succeeded")
	}
	if st, err := sb.State(ctx); err != nil || st != runtime.StateRunning {
		t.Fatalf("first sandbox after a duplicate Create: %v, %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(rootfs, "var/tmp/ready")); err != nil {
		t.Fatal(err)
	}
}
