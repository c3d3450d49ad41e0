// Package runtimetest is the conformance suite every runtime backend passes:
// create and start, state, isolation from inside, limits, kill, delete
// without residue, and re-adoption by a fresh backend instance. It runs on
// real kernels objects: a writable layer over the base template and a real
// network namespace.
package runtimetest

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/layer"
	"github.com/sbx-dev/sbx/internal/network"
	"github.com/sbx-dev/sbx/internal/runtime"
)

// UIDBase is the host uid sandbox root maps to on userns backends.
const UIDBase = 100000

// Fixture holds the host pieces a sandbox needs.
type Fixture struct {
	Lower, LowerUserNS string // template trees
	Layers             *layer.Store
	Net                *network.Manager
}

// NewFixture prepares layers and networking for tests, or skips (fails under
// CI=true) when the host lacks root or the base template.
func NewFixture(t testing.TB) *Fixture {
	t.Helper()
	skip := func(msg string) {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI: " + msg)
		}
		t.Skip(msg)
	}
	if os.Geteuid() != 0 {
		skip("runtime tests need root")
	}
	dir := os.Getenv("SBX_TEMPLATES_DIR")
	if dir == "" {
		dir = "/var/lib/sbx/templates"
	}
	lockHost(t)
	lower := filepath.Join(dir, "base", "rootfs")
	if _, err := os.Stat(filepath.Join(lower, "bin/sh")); err != nil {
		skip("no base template at " + lower + " (run scripts/install.sh)")
	}
	// Sandbox root on userns backends is an unprivileged host uid: every
	// directory above a rootfs must be traversable (0711) for it.
	ldir := filepath.Join(t.TempDir(), "layers")
	for p := ldir; p != "/"; p = filepath.Dir(p) {
		if strings.HasPrefix(p, os.TempDir()+"/") {
			defer os.Chmod(p, 0o711)
		}
	}
	ly, err := layer.New(ldir)
	if err != nil {
		t.Fatal(err)
	}
	// Netlink dumps are interrupted (EINTR) while other tests churn links.
	var nw *network.Manager
	for i := 0; i < 5 && (i == 0 || err != nil); i++ {
		nw, err = network.New(network.Config{Subnet: netip.MustParsePrefix("10.205.0.0/24"), IfPrefix: "sbc", Table: "sbxconf"})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.RemoveTable() })
	return &Fixture{Lower: lower, LowerUserNS: filepath.Join(dir, "base", "rootfs-userns"), Layers: ly, Net: nw}
}

// lockHost serialises fixtures across processes (several `go test` runs may
// share the host): they use a fixed subnet, link prefix and nftables table.
// The lock is held until tb's cleanup; fixtures must not nest.
func lockHost(tb testing.TB) {
	f, err := os.OpenFile("/run/sbx-runtimetest.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
}

// spec prepares a layer and network for a new sandbox running script as init.
func (fx *Fixture) spec(t testing.TB, rt runtime.Runtime, script string, lim runtime.Limits) (runtime.Spec, string) {
	t.Helper()
	return fx.specFrom(t, rt, script, lim, "")
}

// specFrom is spec with the writable layer seeded from a SaveUpper copy
// (seed "" for none).
func (fx *Fixture) specFrom(t testing.TB, rt runtime.Runtime, script string, lim runtime.Limits, seed string) (runtime.Spec, string) {
	t.Helper()
	id := newID()
	lower, owner := fx.Lower, uint32(0)
	if rt.Capabilities().UserNS {
		lower, owner = fx.LowerUserNS, UIDBase
	}
	rootfs, err := fx.Layers.PrepareFrom(context.Background(), id, lower, 64<<20, owner, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fx.Layers.Remove(id); err != nil {
			t.Errorf("layer remove: %v", err)
		}
	})
	l, err := fx.Net.Setup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fx.Net.Teardown(context.Background(), id); err != nil {
			t.Errorf("network teardown: %v", err)
		}
	})
	s := runtime.Spec{ID: id, Rootfs: rootfs, NetNSPath: l.NetNSPath, Hostname: "conformance",
		Args: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, Limits: lim}
	if rt.Capabilities().UserNS {
		s.UIDBase = UIDBase
	}
	return s, rootfs
}

// waitFile waits for the sandbox to write path (relative to its rootfs).
func waitFile(t *testing.T, rootfs, path string, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(rootfs, path)); err == nil && strings.HasSuffix(string(b), "END\n") {
			return string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	partial, _ := os.ReadFile(filepath.Join(rootfs, path))
	t.Fatalf("sandbox did not finish %s within %s; so far:\n%s", path, d, partial)
	return ""
}

// Run runs the suite against newRuntime, which is called once per case and
// again to test re-adoption: its instances must share one state directory.
// fx comes from NewFixture.
func Run(t *testing.T, newRuntime func(t *testing.T) runtime.Runtime, fx *Fixture) {
	t.Run("CreateStateDelete", func(t *testing.T) { testLifecycle(t, fx, newRuntime) })
	t.Run("Kill", func(t *testing.T) { testKill(t, fx, newRuntime(t)) })
	t.Run("Isolation", func(t *testing.T) { testIsolation(t, fx, newRuntime(t)) })
	t.Run("Limits", func(t *testing.T) { testLimits(t, fx, newRuntime(t)) })
	t.Run("InvalidSpec", func(t *testing.T) { testInvalid(t, fx, newRuntime(t)) })
	t.Run("DuplicateID", func(t *testing.T) { testDuplicate(t, fx, newRuntime(t)) })
	t.Run("Parallel", func(t *testing.T) { testParallel(t, fx, newRuntime(t)) })
	t.Run("Checkpoint", func(t *testing.T) { testCheckpoint(t, fx, newRuntime(t)) })
	t.Run("PauseResume", func(t *testing.T) { testPause(t, fx, newRuntime(t)) })
	t.Run("Fork", func(t *testing.T) { testFork(t, fx, newRuntime(t)) })
	t.Run("LoadUnknown", func(t *testing.T) {
		if _, err := newRuntime(t).Load(context.Background(), newID()); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("Load(unknown) = %v, want ErrNotFound", err)
		}
	})
}

// testLifecycle: create+start runs the init, State is running, a second
// runtime instance re-adopts the sandbox (Load, List) and kills and deletes
// it; Delete is idempotent and leaves nothing behind.
func testLifecycle(t *testing.T, fx *Fixture, newRuntime func(t *testing.T) runtime.Runtime) {
	rt := newRuntime(t)
	ctx := context.Background()
	s, rootfs := fx.spec(t, rt, "echo started END > /var/tmp/ready; exec sleep 1000", runtime.Limits{})
	sb := create(t, rt, s)
	waitFile(t, rootfs, "var/tmp/ready", 10*time.Second)
	if st, err := sb.State(ctx); err != nil || st != runtime.StateRunning {
		t.Fatalf("State = %v, %v", st, err)
	}
	if sb.Pid() <= 0 || sb.ID() != s.ID {
		t.Fatalf("Pid %d ID %q", sb.Pid(), sb.ID())
	}
	if chain := ancestry(sb.Pid()); slices.Contains(chain, os.Getpid()) {
		t.Errorf("sandbox init %d descends from the daemon (%v): it would die with it", sb.Pid(), chain)
	}
	again, err := newRuntime(t).Load(ctx, s.ID) // as after a daemon restart
	if err != nil {
		t.Fatalf("re-adopt: %v", err)
	}
	if again.Pid() != sb.Pid() {
		t.Errorf("re-adopted pid %d, want %d", again.Pid(), sb.Pid())
	}
	if ids, _ := rt.List(ctx); !slices.Contains(ids, s.ID) {
		t.Fatalf("List = %v", ids)
	}
	if err := again.Kill(ctx, syscall.SIGKILL); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	for i := 0; i < 2; i++ {
		if err := again.Delete(ctx); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	CheckNoResidue(t, rt, sb, rootfs)
}

// create creates s, and deletes it at cleanup, asserting that nothing of
// it is left, whatever state the test left it in.
func create(t *testing.T, rt runtime.Runtime, s runtime.Spec) runtime.Sandbox {
	t.Helper()
	sb, err := rt.Create(context.Background(), s)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Delete(context.Background()); err != nil {
			t.Errorf("cleanup Delete: %v", err)
		}
		CheckNoResidue(t, rt, sb, s.Rootfs)
	})
	return sb
}

// Spec prepares a writable layer and a network namespace (both released at
// tb's cleanup) for a sandbox of rt running the shell script as init, and
// returns its spec and rootfs path. For benchmarks and ad-hoc tests.
func (fx *Fixture) Spec(tb testing.TB, rt runtime.Runtime, script string, lim runtime.Limits) (runtime.Spec, string) {
	return fx.spec(tb, rt, script, lim)
}
