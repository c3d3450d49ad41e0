package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// Sandbox is one OCI container of a backend.
type Sandbox struct {
	r   *Runtime
	id  string
	pid int
}

// Create implements runtime.Runtime: bundle, then `run --detach` (create and
// start in one exec). On error the container and bundle are removed.
func (r *Runtime) Create(ctx context.Context, s runtime.Spec) (runtime.Sandbox, error) {
	return r.start(ctx, s, []string{"run", "--detach"})
}

// start claims s.ID, writes the bundle and runs the runtime subcommand cmd
// (run or restore, with flags) on it. On error everything it made is removed;
// a sandbox that already had the id is never touched.
func (r *Runtime) start(ctx context.Context, s runtime.Spec, cmd []string) (_ runtime.Sandbox, err error) {
	if err := validate(s); err != nil {
		return nil, err
	}
	if s, err = resolve(s); err != nil {
		return nil, err
	}
	if err := r.claim(s.ID); err != nil {
		return nil, err
	}
	sb := &Sandbox{r: r, id: s.ID}
	defer func() {
		// After a timeout the binary hangs and so would its delete: the
		// caller deletes (runtime.Runtime.Create's contract).
		if err != nil && !errors.Is(err, runtime.ErrTimeout) {
			_ = sb.Delete(context.WithoutCancel(ctx))
		}
	}()
	b := r.bundle(s.ID)
	spec := buildSpec(r.kind, s)
	key := r.filterKey(spec)
	cached := r.useCachedFilter(spec, key)
	cfg, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("oci: spec: %w", err)
	}
	if err := os.WriteFile(filepath.Join(b, "config.json"), cfg, 0o600); err != nil {
		return nil, fmt.Errorf("oci: bundle: %w", err)
	}
	if err := r.launch(ctx, s.ID, b, cmd); err != nil {
		return nil, err
	}
	if key != "" && !cached {
		r.learnFilter(key, s.ID)
	}
	if sb.pid, err = readPid(filepath.Join(b, "pid")); err != nil {
		return nil, fmt.Errorf("%s: %w", r.kind, err)
	}
	if r.kind != "runsc" { // a user namespace: inotify.go
		if err := limitInotify(ctx, sb.pid); err != nil {
			return nil, fmt.Errorf("%s: %w", r.kind, err)
		}
	}
	r.guardGuest(s.ID, sb.pid)
	return sb, nil
}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: bad pid %q", path, b)
	}
	return pid, nil
}

// claim creates the bundle directory of id, failing with an error wrapping
// fs.ErrExist if the id is taken (a bundle or runtime state exists): Create's
// cleanup must never tear down another sandbox of the same id.
func (r *Runtime) claim(id string) error {
	if err := os.MkdirAll(r.bundles(), 0o711); err != nil {
		return fmt.Errorf("oci: bundles dir: %w", err)
	}
	if err := os.Mkdir(r.bundle(id), 0o711); err != nil {
		return fmt.Errorf("oci: sandbox %s: %w", id, err)
	}
	if r.hasState(id) {
		_ = os.Remove(r.bundle(id))
		return fmt.Errorf("oci: sandbox %s: runtime state exists: %w", id, fs.ErrExist)
	}
	return nil
}

// hasState reports whether the runtime's --root holds state for id (runc and
// crun: a directory; runsc: <id>_sandbox:<id>.state and friends). Only
// runsc's needs the glob, a read of the whole --root (one entry per live
// sandbox) on every create.
func (r *Runtime) hasState(id string) bool {
	if _, err := os.Stat(filepath.Join(r.root, id)); err == nil {
		return true
	}
	if r.kind != "runsc" {
		return false
	}
	m, _ := filepath.Glob(filepath.Join(r.root, id+"_sandbox:*"))
	return len(m) > 0
}

// launch runs `<runtime> <cmd...> --bundle B --pid-file B/pid <id>` with
// stdio on the bundle's log file, so the sandbox never holds a pipe to the
// daemon (and survives it).
func (r *Runtime) launch(ctx context.Context, id, bundle string, sub []string) error {
	logf, err := os.OpenFile(filepath.Join(bundle, "console.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	args := append(append([]string{}, sub...), "--bundle", bundle, "--pid-file", filepath.Join(bundle, "pid"), id)
	cmd := r.command(ctx, id, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	err = r.runCmd(ctx, cmd)
	if err != nil {
		err = timedOut(ctx, err)
	}
	r.observe(sub[0], t0, err)
	if err != nil {
		tail := fileTail(filepath.Join(bundle, "console.log"), 2000)
		return fmt.Errorf("%s %s: %w: %s", r.kind, sub[0], err, bytes.TrimSpace(tail))
	}
	return nil
}

// Load implements runtime.Runtime.
func (r *Runtime) Load(ctx context.Context, id string) (runtime.Sandbox, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%s: %w", id, runtime.ErrNotFound)
	}
	st, err := r.state(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		if _, serr := os.Stat(r.bundle(id)); serr == nil {
			return &Sandbox{r: r, id: id}, nil // bundle left: Delete cleans it
		}
	}
	if err != nil {
		return nil, err
	}
	if st.Status == "running" && runtime.ProcessAlive(st.Pid) {
		r.guardGuest(id, st.Pid)
	}
	return &Sandbox{r: r, id: id, pid: st.Pid}, nil
}

// ID implements runtime.Sandbox.
func (s *Sandbox) ID() string { return s.id }

// Pid implements runtime.Sandbox.
func (s *Sandbox) Pid() int { return s.pid }

// State implements runtime.Sandbox.
func (s *Sandbox) State(ctx context.Context) (runtime.State, error) {
	st, err := s.r.state(ctx, s.id)
	if err != nil {
		return runtime.StateStopped, err
	}
	switch st.Status {
	case "running":
		// runsc keeps reporting "running" after its sandbox process was
		// OOM-killed; trust the process table.
		if st.Pid > 0 && !runtime.ProcessAlive(st.Pid) {
			return runtime.StateStopped, nil
		}
		return runtime.StateRunning, nil
	case "created":
		return runtime.StateCreated, nil
	case "paused":
		return runtime.StatePaused, nil
	}
	return runtime.StateStopped, nil
}

// Kill implements runtime.Sandbox: the runtime signals every process of the
// container (`kill --all`).
func (s *Sandbox) Kill(ctx context.Context, sig syscall.Signal) error {
	_, err := s.r.run(ctx, s.id, "kill", "--all", s.id, strconv.Itoa(int(sig)))
	return err
}

// Delete implements runtime.Sandbox: force-delete the container (killing it),
// then remove the bundle. Idempotent.
func (s *Sandbox) Delete(ctx context.Context) error {
	s.r.releaseGuest(s.id)
	_, err := s.r.run(ctx, s.id, "delete", "--force", s.id)
	if err != nil {
		if _, serr := s.r.state(ctx, s.id); !errors.Is(serr, runtime.ErrNotFound) {
			return err
		}
	}
	if err := s.r.reapCgroups(ctx, s.id); err != nil {
		return err
	}
	if err := os.RemoveAll(s.r.bundle(s.id)); err != nil {
		return fmt.Errorf("oci: remove bundle: %w", err)
	}
	return nil
}

// ConsoleTail implements runtime.ConsoleTailer: the end of the bundle's
// console.log, which only the runtime writes once the agent listens.
func (s *Sandbox) ConsoleTail(n int) []byte {
	return fileTail(filepath.Join(s.r.bundle(s.id), "console.log"), n)
}

// fileTail is the last n bytes of the file at path (nil if unreadable).
func fileTail(path string, n int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(st.Size()-int64(n), 0)
	b := make([]byte, st.Size()-off)
	k, _ := f.ReadAt(b, off)
	return b[:k]
}

// CgroupPaths implements runtime.Sandbox.
func (s *Sandbox) CgroupPaths() map[string]string { return s.r.cgroupPaths(s.id) }
