package main

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Bounds of the per-user process limit under gVisor.
const (
	mbPerProcess = 2    // sandbox memory (MiB) budgeted per process of a user
	minNproc     = 32   // never fewer (a small sandbox still runs a build)
	maxNproc     = 4096 // never more
)

// commandNproc is the RLIMIT_NPROC given to every command started through
// the agent (process RPC, PTY), root's included, under gVisor, or 0
// elsewhere. gVisor's Sentry holds every process of the sandbox in its own
// memory, bounded as a whole by the host cgroup: a fork bomb that reaches
// the host's pids or memory limit gets the whole sandbox killed. Bounding
// each user's processes to what the sandbox's memory can hold (mbPerProcess
// each; measured: 64, 128, 256 processes in 128, 256, 512 MiB leave the
// sandbox alive, 256 in 128 MiB or 512 in 512 MiB kill it) and to 2/5 of the
// sandbox's pids limit (SBX_PIDS_LIMIT, set by the daemon; the host cgroup
// holds runtime.HostPids of it, room for the Sentry's own threads too; 512
// processes under a host limit of 512 killed a 1 GiB sandbox, 256 peaked at
// 431 host pids) makes the bomb's forks fail inside,
// as on a machine, and the agent lives. gVisor counts the limit per user
// inside the sandbox and, unlike Linux, binds root too unless the task holds
// CAP_SYS_ADMIN or CAP_SYS_RESOURCE, which no command gets
// (pkg/sentry/kernel/kernel.go, UserCounters.incRLimitNProc); root's count
// includes the agent's own threads, but the agent itself runs without the
// limit, so its threads never fail to start. Not on crun/runc: the host
// kernel counts RLIMIT_NPROC per host uid, shared by every sandbox in the
// same userns range, and exempts root; there the pids cgroup bounds the
// sandbox and its kernel OOM-kills inside.
func commandNproc() uint64 {
	if !underGVisor() {
		return 0
	}
	pids, _ := strconv.ParseUint(os.Getenv("SBX_PIDS_LIMIT"), 10, 64)
	return nprocFor(memTotalMB(), pids)
}

// nprocFor is the users' process limit for a sandbox of memMB MiB and a
// host pids limit of pids (0: unknown).
func nprocFor(memMB, pids uint64) uint64 {
	n := uint64(maxNproc)
	if memMB > 0 {
		n = min(n, memMB/mbPerProcess)
	}
	if pids > 0 {
		n = min(n, pids*2/5)
	}
	return max(n, minNproc)
}

// underGVisor reports whether the agent runs on gVisor's Sentry.
func underGVisor() bool {
	b, err := os.ReadFile("/proc/version")
	return err == nil && strings.Contains(string(b), "gvisor")
}

// memTotalMB is the memory sysinfo(2) reports in MiB (gVisor reports the
// sandbox's memory limit there, as MemTotal of /proc/meminfo, without the
// usage scan that generating /proc/meminfo costs), or 0.
func memTotalMB() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return si.Totalram * uint64(si.Unit) >> 20
}
