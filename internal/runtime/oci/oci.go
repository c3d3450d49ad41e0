package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// Config configures a backend.
type Config struct {
	Binary   string // runtime binary; default: /opt/sbx/bin/runsc or PATH lookup
	StateDir string // runtime --root and bundles live under it
	// OwnerDir marks the daemon's sandboxes on the host: a process naming a
	// path under it makes a cgroup with no runtime state one of this
	// daemon's strays (Strays). Default StateDir.
	OwnerDir string
	Timeout  time.Duration // bound on each runtime command (default 30 s)
	Debug    bool          // runsc: write debug logs into the bundle dir
	// OnCommand observes every runtime command (metrics); nil: none. err
	// wraps runtime.ErrTimeout when the command hit Timeout.
	OnCommand func(runtime, command string, d time.Duration, err error)
	// Log receives what the guest memory watches report; nil: slog.Default().
	Log *slog.Logger
}

var _ runtime.Runtime = (*Runtime)(nil)

// Runtime is one OCI backend. Apart from the guest memory watches of its
// runsc sandboxes (guests, rebuilt by Load) it holds no mutable state of
// its own: the runtime binary's --root and the bundle directories are the
// truth, so any number of instances over one StateDir (a restarted daemon)
// agree.
type Runtime struct {
	kind   string
	cfg    Config
	root   string // runtime --root
	hybrid bool   // cgroup v1 controllers with a cgroup2 mount (crun workaround)
	v2     bool   // pure cgroup v2 host
	// starter starts crun commands on a hybrid host (mntns.go); nil
	// otherwise: commands start from any thread.
	starter *nsStarter
	sealed  *sealedBinary // crun, runc: what commands execute (sealed.go)
	filters bpfCache      // crun: compiled seccomp filters by profile
	guests  guestWatches  // runsc on cgroup v1: by sandbox id (guestmem.go)
}

// New returns the backend kind ("runsc", "crun", "runc").
func New(kind string, cfg Config) (*Runtime, error) {
	switch kind {
	case "runsc", "crun", "runc":
	default:
		return nil, fmt.Errorf("%w: unknown runtime %q", runtime.ErrUnavailable, kind)
	}
	bin, err := findBinary(kind, cfg.Binary)
	if err != nil {
		return nil, err
	}
	if cfg.Binary, err = filepath.Abs(bin); err != nil {
		return nil, err
	}
	// Commands may start with "/" as their working directory (mntns.go).
	if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
		return nil, err
	}
	if cfg.OwnerDir == "" {
		cfg.OwnerDir = cfg.StateDir
	}
	if cfg.OwnerDir, err = filepath.Abs(cfg.OwnerDir); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	r := &Runtime{kind: kind, cfg: cfg, root: filepath.Join(cfg.StateDir, kind)}
	r.v2, r.hybrid = cgroupMode()
	if kind != "runsc" {
		r.sealed = &sealedBinary{path: cfg.Binary, links: filepath.Join(cfg.StateDir, ".exe")}
		shareHostFairly(cfg.Log)
	}
	if err := r.probe(); err != nil {
		return nil, err
	}
	if kind == "runsc" && !r.guestSplit() {
		cfg.Log.Warn("runsc: no cgroup v1 memory controller: sandboxes get no guest memory cgroup, a balloon may cost the whole sandbox (docs/SECURITY.md)")
	}
	for _, d := range []string{r.root, r.bundles()} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func findBinary(kind, given string) (string, error) {
	cands := []string{given}
	if given == "" {
		cands = []string{kind}
		if kind == "runsc" {
			cands = []string{"/opt/sbx/bin/runsc", "runsc"}
		}
	}
	for _, c := range cands {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s binary not found (%v)", runtime.ErrUnavailable, kind, cands)
}

// probe checks that the binary runs (`--version`, bounded by the timeout)
// and, for crun on a hybrid host, makes the starter of its commands.
func (r *Runtime) probe() (err error) {
	if r.kind == "crun" && r.hybrid {
		if r.starter, err = hybridStarter(); err != nil {
			return fmt.Errorf("%w: crun on a hybrid cgroup host: %w", runtime.ErrUnavailable, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	return r.Probe(ctx)
}

// Probe checks that the runtime binary still runs (`<binary> --version`)
// within ctx; a missing, failing or hanging binary is ErrUnavailable. The
// daemon's health check calls it.
func (r *Runtime) Probe(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, r.cfg.Binary, "--version")
	cmd.Env = runtimeEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s --version: %w: %s", runtime.ErrUnavailable, r.cfg.Binary, err, bytes.TrimSpace(out))
	}
	return nil
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return r.kind }

// Capabilities implements runtime.Runtime.
func (r *Runtime) Capabilities() runtime.Capabilities {
	return runtime.Capabilities{Checkpoint: r.kind == "runsc", UserNS: r.kind != "runsc", OwnKernel: r.kind == "runsc"}
}

func (r *Runtime) bundles() string         { return filepath.Join(r.cfg.StateDir, "bundles-"+r.kind) }
func (r *Runtime) bundle(id string) string { return filepath.Join(r.bundles(), id) }

// globalFlags are the runtime's flags before the subcommand.
func (r *Runtime) globalFlags(id string) []string {
	f := []string{"--root", r.root}
	if r.kind == "runsc" {
		f = append(f, "--platform=systrap", "--network=sandbox", "--overlay2=none", "--oci-seccomp", "--gso=false", "--software-gso=false",
			"--allow-suid") // the Sentry honours setuid bits (sudo); its root is the Sentry's
		if r.cfg.Debug {
			f = append(f, "--debug", "--debug-log="+r.bundle(id)+"/")
		}
	}
	return f
}

// command builds an invocation of the runtime binary; run it with
// r.runCmd.
func (r *Runtime) command(ctx context.Context, id string, args ...string) *exec.Cmd {
	bin := r.cfg.Binary
	if r.sealed != nil {
		bin = r.sealed.execPath()
	}
	cmd := exec.CommandContext(ctx, bin, append(r.globalFlags(id), args...)...)
	cmd.Args[0] = r.cfg.Binary // what ps shows
	cmd.Env = runtimeEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not in our process group
	// On timeout the whole session goes: a hung runtime's helpers must not
	// hold the output pipes (WaitDelay bounds that anyway) or linger.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd
}

// runCmd starts cmd and waits for it (cmd.Run). crun on a hybrid host starts
// in a private mount namespace without the cgroup2 mount (mntns.go).
func (r *Runtime) runCmd(ctx context.Context, cmd *exec.Cmd) error {
	if r.starter == nil {
		return cmd.Run()
	}
	if err := r.starter.start(ctx, cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// run executes a runtime command with the backend's timeout and returns its
// output; stderr is part of the error.
func (r *Runtime) run(ctx context.Context, id string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	cmd := r.command(ctx, id, args...)
	var stdout bytes.Buffer
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := r.runCmd(ctx, cmd)
	if err != nil {
		err = timedOut(ctx, err)
	}
	r.observe(args[0], t0, err)
	if err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w: %s", r.kind, args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// observe reports a finished command to Config.OnCommand.
func (r *Runtime) observe(command string, t0 time.Time, err error) {
	if r.cfg.OnCommand != nil {
		r.cfg.OnCommand(r.kind, command, time.Since(t0), err)
	}
}

// timedOut adds runtime.ErrTimeout to err when ctx (the command's bound)
// expired.
func timedOut(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", runtime.ErrTimeout, err)
	}
	return err
}

// state is the subset of `<runtime> state` we use.
type state struct {
	ID     string `json:"id"`
	Pid    int    `json:"pid"`
	Status string `json:"status"`
}

func (r *Runtime) state(ctx context.Context, id string) (state, error) {
	out, err := r.run(ctx, id, "state", id)
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "does not exist") || strings.Contains(msg, "not exist") ||
			strings.Contains(msg, "not found") || strings.Contains(msg, "No such file or directory") {
			return state{}, fmt.Errorf("%s: %w", id, runtime.ErrNotFound)
		}
		return state{}, err
	}
	var st state
	if err := json.Unmarshal(out, &st); err != nil {
		return state{}, fmt.Errorf("%s state %s: %w", r.kind, id, err)
	}
	return st, nil
}

// List implements runtime.Runtime: the ids with a bundle or runtime state
// (runc and crun keep a directory per container under --root; runsc a
// "<id>_sandbox:<id>.state" file).
func (r *Runtime) List(context.Context) ([]string, error) {
	seen := map[string]bool{}
	for _, dir := range []string{r.bundles(), r.root} {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("oci: list %s: %w", dir, err)
		}
		for _, e := range ents {
			id, _, _ := strings.Cut(e.Name(), "_sandbox:")
			if validID(id) && (e.IsDir() || id != e.Name()) {
				seen[id] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Close releases host state the backend keeps per StateDir rather than per
// sandbox: runsc pins a "null" network namespace with a bind mount at
// <StateDir>/runsc/null-netns to start gofers faster. Call it only when no
// sandbox of this StateDir will be started again (tests, uninstall); running
// sandboxes are not affected. It is idempotent.
func (r *Runtime) Close() error {
	p := filepath.Join(r.root, "null-netns")
	// Concurrent first starts may each have pinned it: unmount every layer.
	for i := 0; i < 64; i++ {
		err := syscall.Unmount(p, syscall.MNT_DETACH)
		if err == syscall.EINVAL || err == syscall.ENOENT {
			break
		}
		if err != nil {
			return fmt.Errorf("oci: unmount %s: %w", p, err)
		}
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("oci: %w", err)
	}
	return nil
}
