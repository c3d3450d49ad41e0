package oci

import "strconv"

// PTYs of user-namespace sandboxes (crun, runc).
//
// The host's kernel.pty.max (4096 by default) bounds the PTYs of every
// devpts instance together, less kernel.pty.reserve (1024) kept for the
// host's own: before, a crun sandbox's `user` opening /dev/ptmx until
// refused got all 3,071 others, and every other crun/runc sandbox's PTY
// (the terminal API, `sbx shell`, E2B's pty.create) failed with ENOSPC while
// it held them. Each such sandbox's devpts gets a bound of its own (max=),
// and the daemon raises the host's bound so that 1024 sandboxes at theirs
// fit (the kernel's ceiling is 1 Mi). runsc's devpts is the Sentry's own.
const (
	// SandboxPTYs bounds one sandbox's PTYs (its devpts' max=).
	SandboxPTYs = 256
	// hostPTYs is the floor of kernel.pty.max: the host's reserve and 1024
	// sandboxes at their bound.
	hostPTYs = 1024 + SandboxPTYs*1024
)

// ptyMax is the host's PTY bound (a var for tests).
var ptyMax = "/proc/sys/kernel/pty/max"

// devptsOptions are the mount options of a sandbox's /dev/pts; a
// user-namespace sandbox's devpts is bounded (gVisor's takes no max=).
func devptsOptions(userNS bool) []string {
	o := []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}
	if userNS {
		o = append(o, "max="+strconv.Itoa(SandboxPTYs))
	}
	return o
}

// raiseHostPTYs raises kernel.pty.max to hostPTYs (never lowers it).
func raiseHostPTYs() error { return raiseSysctl(ptyMax, hostPTYs) }
