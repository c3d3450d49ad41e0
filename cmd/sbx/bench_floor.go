package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// floor is the runtime's floor for the first command, measured in the same
// run as the figures set against it: inside a bare `<runtime> run` of the
// template's files (all its layers, as its sandboxes see them: no sbx, no
// network, no agent), the time of
// `bash -l -c true` started from a shell already running there, as the
// template's default user. P50 is the median over N runs; Cold the first.
type floor struct {
	Runtime string  `json:"runtime"`
	N       int     `json:"n"`
	P50     float64 `json:"p50_ms"`
	P95     float64 `json:"p95_ms"`
	Cold    float64 `json:"cold_ms"`
	Err     string  `json:"error,omitempty"`
}

// floorScript runs `bash -l -c true` $1 times and prints each duration in
// µs. $EPOCHREALTIME is a bash builtin: the loop itself execs nothing.
const floorScript = `for ((i = 0; i < $1; i++)); do
t0=${EPOCHREALTIME/./}; bash -l -c true; t1=${EPOCHREALTIME/./}
echo $((t1 - t0)); done`

// measureFloor runs the floor measurement with the bare runtime rt on rootfs.
// It needs root and the runtime on this machine (the daemon's).
func measureFloor(ctx context.Context, rt, rootfs string, n int) *floor {
	fl := &floor{Runtime: rt, N: n}
	us, err := runFloor(ctx, rt, rootfs, n)
	if err == nil && len(us) != n {
		err = fmt.Errorf("got %d of %d timings", len(us), n)
	}
	if err != nil {
		fl.Err = err.Error()
		return fl
	}
	fl.Cold = float64(us[0]) / 1000
	sort.Slice(us, func(i, j int) bool { return us[i] < us[j] })
	fl.P50, fl.P95 = float64(us[(n-1)/2])/1000, float64(us[min(n-1, n*95/100)])/1000
	return fl
}

func runFloor(ctx context.Context, rt, rootfs string, n int) ([]int64, error) {
	if _, err := os.Stat(filepath.Join(rootfs, "bin/bash")); err != nil {
		return nil, fmt.Errorf("floor: no template rootfs with bash at %s (--floor-rootfs): %w", rootfs, err)
	}
	dir, err := os.MkdirTemp("", "sbx-floor-")
	if err != nil {
		return nil, err
	}
	state := filepath.Join(dir, "state")
	defer func() {
		_ = syscall.Unmount(filepath.Join(state, "null-netns"), syscall.MNT_DETACH) // runsc pins one in its --root
		_ = os.RemoveAll(dir)
	}()
	rootfs, unmount, err := templateStack(rootfs, dir)
	if err != nil {
		return nil, err
	}
	defer unmount() // runs before the removal of dir, deferred earlier
	if err := writeFloorBundle(dir, rootfs, n); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	argv := floorArgv(rt, state, fmt.Sprintf("floor-%d", os.Getpid()))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("floor: %s run: %w: %s", rt, err, strings.TrimSpace(errb.String()))
	}
	return parseMicros(out.Bytes())
}

// floorArgv is the bare runtime's command line. runsc runs on systrap like
// sbx's; crun (and runc) on a hybrid cgroup host run as sbx runs them there:
// in a private mount namespace without the cgroup2 mount.
func floorArgv(rt, state, id string) []string {
	bin := rt
	if rt == "runsc" {
		if _, err := os.Stat("/opt/sbx/bin/runsc"); err == nil {
			bin = "/opt/sbx/bin/runsc"
		}
		return []string{bin, "--root", state, "--platform=systrap", "--network=none", "run", id}
	}
	argv := []string{bin, "--root", state, "run", id}
	if isMountpoint("/sys/fs/cgroup/unified") {
		argv = append([]string{"unshare", "--mount", "--propagation", "slave", "sh", "-c",
			`umount -l /sys/fs/cgroup/unified; exec "$0" "$@"`}, argv...)
	}
	return argv
}

func isMountpoint(p string) bool {
	var a, b syscall.Stat_t
	return syscall.Stat(p, &a) == nil && syscall.Stat(filepath.Dir(p), &b) == nil && a.Dev != b.Dev
}

// writeFloorBundle writes an OCI bundle (a minimal default spec) whose
// process is the floor script, as the rootfs's "user" when it has one.
func writeFloorBundle(dir, rootfs string, n int) error {
	uid, gid, home := passwdUser(rootfs, "user")
	spec := map[string]any{
		"ociVersion": "1.0.2",
		"root":       map[string]any{"path": rootfs, "readonly": true},
		"hostname":   "floor",
		"process": map[string]any{
			"user": map[string]any{"uid": uid, "gid": gid}, "cwd": home,
			"args":            []string{"/bin/bash", "-c", floorScript, "floor", strconv.Itoa(n)},
			"env":             []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home},
			"rlimits":         []map[string]any{{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}},
			"noNewPrivileges": true,
		},
		"mounts": []map[string]any{
			{"destination": "/proc", "type": "proc", "source": "proc"},
			{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "nodev"}},
			{"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": []string{"nosuid", "noexec", "nodev", "ro"}},
		},
		"linux": map[string]any{"namespaces": []map[string]string{
			{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "network"},
		}},
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
}

// passwdUser looks name up in rootfs's /etc/passwd (root if absent).
func passwdUser(rootfs, name string) (uid, gid int, home string) {
	b, _ := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) >= 6 && f[0] == name {
			u, e1 := strconv.Atoi(f[2])
			g, e2 := strconv.Atoi(f[3])
			if e1 == nil && e2 == nil {
				return u, g, f[5]
			}
		}
	}
	return 0, 0, "/root"
}

func parseMicros(out []byte) ([]int64, error) {
	var us []int64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		v, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			return nil, errors.New("floor: unexpected output: " + sc.Text())
		}
		us = append(us, v)
	}
	return us, nil
}
