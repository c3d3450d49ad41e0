package fake

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"syscall"
	"testing"

	"github.com/sbx-dev/sbx/internal/runtime"
)

func spec(id string) runtime.Spec {
	return runtime.Spec{ID: id, Rootfs: "/rootfs/" + id, Args: []string{"/.sbx/sbx-agent"}}
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	r := New(Config{CgroupRoot: "/cg"})
	sb, err := r.Create(ctx, spec("a1"))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := sb.State(ctx); st != runtime.StateRunning || err != nil {
		t.Fatalf("State = %s, %v", st, err)
	}
	if sb.Pid() < firstPid || sb.CgroupPaths()[""] != "/cg/sbx/a1" {
		t.Fatalf("pid %d cgroups %v", sb.Pid(), sb.CgroupPaths())
	}
	again, err := r.Reopen().Load(ctx, "a1")
	if err != nil || again.Pid() != sb.Pid() {
		t.Fatalf("re-adopt: %v pid %d", err, again.Pid())
	}
	if err := again.Kill(ctx, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if err := again.Kill(ctx, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st, _ := sb.State(ctx); st != runtime.StateStopped || sb.Pid() != 0 {
		t.Fatalf("after SIGKILL: %s pid %d", st, sb.Pid())
	}
	if got := r.Signals("a1"); !slices.Equal(got, []int{int(syscall.SIGUSR1), int(syscall.SIGKILL)}) {
		t.Fatalf("signals %v", got)
	}
	if err := sb.Kill(ctx, syscall.SIGKILL); err == nil {
		t.Fatal("Kill of a stopped sandbox succeeded")
	}
	for i := 0; i < 2; i++ {
		if err := sb.Delete(ctx); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := r.Load(ctx, "a1"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Load after Delete = %v", err)
	}
	if _, err := sb.State(ctx); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("State after Delete = %v", err)
	}
}

func TestCreateErrors(t *testing.T) {
	ctx := context.Background()
	r := New(Config{})
	if _, err := r.Create(ctx, spec("taken")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec runtime.Spec
		is   error
	}{
		{"bad id", spec("../x"), nil},
		{"empty id", spec(""), nil},
		{"relative rootfs", runtime.Spec{ID: "b", Rootfs: "r", Args: []string{"x"}}, nil},
		{"no argv", runtime.Spec{ID: "b", Rootfs: "/r"}, nil},
		{"duplicate", spec("taken"), fs.ErrExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Create(ctx, tc.spec)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Create = %v, want error (%v)", err, tc.is)
			}
		})
	}
	if ids, _ := r.List(ctx); !slices.Equal(ids, []string{"taken"}) {
		t.Fatalf("List = %v", ids)
	}
}

func TestInjectedFailures(t *testing.T) {
	ctx := context.Background()
	r := New(Config{})
	boom := errors.New("boom")
	r.Fail("create", boom)
	if _, err := r.Create(ctx, spec("a")); !errors.Is(err, boom) {
		t.Fatalf("Create = %v, want boom", err)
	}
	if r.Running() != nil {
		t.Fatalf("failed Create left %v", r.Running())
	}
	sb, err := r.Create(ctx, spec("a"))
	if err != nil {
		t.Fatalf("second Create: %v", err)
	}
	for _, op := range []struct {
		name string
		call func() error
	}{
		{"kill", func() error { return sb.Kill(ctx, syscall.SIGTERM) }},
		{"delete", func() error { return sb.Delete(ctx) }},
		{"state", func() error { _, err := sb.State(ctx); return err }},
		{"load", func() error { _, err := r.Load(ctx, "a"); return err }},
		{"list", func() error { _, err := r.List(ctx); return err }},
	} {
		r.Fail(op.name, nil)
		if err := op.call(); !errors.Is(err, ErrInjected) {
			t.Errorf("%s = %v, want ErrInjected", op.name, err)
		}
	}
	if !r.Exit("a") || len(r.Running()) != 0 {
		t.Fatalf("Exit: running %v", r.Running())
	}
}

func TestCheckpointRestore(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		caps runtime.Capabilities
		ok   bool
	}{{"with checkpoint", runtime.Capabilities{Checkpoint: true}, true}, {"without", runtime.Capabilities{}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Config{Capabilities: tc.caps})
			sb, _ := r.Create(ctx, spec("a"))
			img := t.TempDir()
			err := sb.(runtime.Checkpointer).Checkpoint(ctx, img, false)
			if (err == nil) != tc.ok {
				t.Fatalf("Checkpoint = %v", err)
			}
			if !tc.ok {
				return
			}
			if st, _ := sb.State(ctx); st != runtime.StateStopped {
				t.Fatalf("after checkpoint: %s", st)
			}
			if _, err := r.Restore(ctx, spec("b"), t.TempDir()); err == nil {
				t.Fatal("Restore from an empty dir succeeded")
			}
			fork, err := r.Restore(ctx, spec("b"), img)
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := fork.State(ctx); st != runtime.StateRunning {
				t.Fatalf("restored: %s", st)
			}
		})
	}
}
