package oci

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// inotify bounds of user-namespace sandboxes (crun, runc).
//
// The kernel counts a user's inotify instances and watches at every level of
// user namespaces: in the sandbox's namespace, against that namespace's
// bound (unlimited unless set), and again in the host's, against
// fs.inotify.max_user_instances / max_user_watches, charged to the
// namespace's owner: host root, who made it through the runtime. So every
// crun/runc sandbox shared one host bucket with host root's own processes
// (the daemon, systemd, udev): a sandbox's process, `user` included, that
// opened 128 instances (the kernel's default bound) left host root and every
// other such sandbox none (inotify_init: EMFILE) for as long as it held them.
//
// Each sandbox's namespace gets bounds of its own (per uid in it, as a Linux
// machine's), written once it runs and before any of its code does
// (limitInotify), and the host's bounds are raised to hold many such buckets
// (raiseHostInotify). Root inside cannot raise its namespace's: /proc/sys is
// read-only and it lacks CAP_SYS_RESOURCE.
const (
	// SandboxInotifyInstances and SandboxInotifyWatches bound each uid of a
	// sandbox (the kernel's default per user, and 64 Ki watches).
	SandboxInotifyInstances = 128
	SandboxInotifyWatches   = 65536
	// hostInotifyInstances and hostInotifyWatches are the floors the host's
	// bounds are raised to. An instance is a descriptor (about 1 KiB of kernel
	// memory, charged to its sandbox's memory cgroup, as a watch is): 4 Mi is
	// twice what one sandbox's processes can hold open (the pids limit, 512,
	// times RLIMIT_NOFILE, 4096), so root inside, which may switch to any of
	// its 65536 uids and fill each one's bound, cannot reach it alone.
	hostInotifyInstances = 1 << 22
	hostInotifyWatches   = 1 << 29
)

// hostSysctl is where the host's inotify bounds are (a var for tests).
var hostSysctl = "/proc/sys/fs/inotify/"

// raiseHostInotify raises the host's per-user inotify bounds to their floors
// (never lowers them).
func raiseHostInotify() error {
	if err := raiseSysctl(hostSysctl+"max_user_instances", hostInotifyInstances); err != nil {
		return err
	}
	return raiseSysctl(hostSysctl+"max_user_watches", hostInotifyWatches)
}

// limitInotify writes the sandbox's own inotify bounds into the user
// namespace of its init (pid): /proc/sys/user/max_inotify_* are that
// namespace's when written from inside it, which takes a single-threaded
// process (nsenter). A pid whose namespace is the daemon's own (the init
// died and its pid was reused) is refused: its bounds are the host's.
func limitInotify(ctx context.Context, pid int) error {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", pid))
	if err != nil {
		return fmt.Errorf("inotify bounds: %w", err)
	}
	defer ns.Close()
	var own, its unix.Stat_t
	if err := unix.Stat("/proc/self/ns/user", &own); err != nil {
		return fmt.Errorf("inotify bounds: %w", err)
	}
	if err := unix.Fstat(int(ns.Fd()), &its); err != nil {
		return fmt.Errorf("inotify bounds: %w", err)
	}
	if own.Dev == its.Dev && own.Ino == its.Ino {
		return errors.New("inotify bounds: the sandbox's init is in the host's user namespace")
	}
	script := fmt.Sprintf("echo %d >/proc/sys/user/max_inotify_instances && echo %d >/proc/sys/user/max_inotify_watches",
		SandboxInotifyInstances, SandboxInotifyWatches)
	cmd := exec.CommandContext(ctx, "nsenter", "--user=/proc/self/fd/3", "--", "/bin/sh", "-c", script)
	cmd.ExtraFiles = []*os.File{ns}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("inotify bounds: nsenter: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
