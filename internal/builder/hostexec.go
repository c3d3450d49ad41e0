package builder

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// isolated runs argv in new mount and pid namespaces, so that whatever it
// mounts (debootstrap mounts /proc in the target) and whatever it starts go
// away with it, even if sbx is killed: the mount namespace is private, its
// init is killed when unshare dies (--kill-child), and unshare dies with sbx
// (Pdeathsig) or with ctx (its process group is killed).
func isolated(ctx context.Context, log io.Writer, argv ...string) error {
	args := append([]string{"--mount", "--propagation", "private", "--pid", "--fork", "--kill-child"}, argv...)
	return hostRun(ctx, log, "unshare", args...)
}

// chroot runs script with bash chrooted into root, with /proc and a private
// /dev/pts (apt logs through a pty) mounted, isolated.
func chroot(ctx context.Context, log io.Writer, root, script string) error {
	const wrapper = `set -e
mount -t proc proc "$1/proc"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$1/dev/pts" 2>/dev/null || true
chroot "$1" /bin/bash -c "$2"
`
	return isolated(ctx, log, "bash", "-c", wrapper, "chroot", root, script)
}

// hostRun runs name on the host with a clean environment, killing its
// whole process group when ctx ends.
func hostRun(ctx context.Context, log io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = hostEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", name, ctx.Err())
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// hostEnv is the environment of host commands: fixed, plus the host's
// proxy settings.
func hostEnv() []string {
	env := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive"}
	for _, k := range []string{"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
