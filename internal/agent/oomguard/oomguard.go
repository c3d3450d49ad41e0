// Package oomguard is the agent's out-of-memory killer for gVisor sandboxes.
//
// Under gVisor every process of the sandbox lives in the Sentry's memory,
// and the host's memory cgroup bounds the Sentry as a whole: a process that
// allocates past the sandbox's limit gets the host to kill the Sentry, and
// the sandbox with everything in it. The guard watches the Sentry's own
// accounting (/proc/meminfo: MemTotal is the sandbox's limit) and, when
// what is left falls under a reserve, SIGKILLs the process that holds the
// most memory, as a kernel's OOM killer would: the offender dies inside,
// the sandbox and its agent live. Processes of users other than root are
// chosen first; the agent never.
package oomguard

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Interval is how often the guard reads /proc/meminfo once over half the
// memory is in use; IdleInterval while less is (an idle sandbox costs the
// host a read every 25 ms, not every 10). A balloon in gVisor grows by page
// faults the Sentry serves, so from half used it does not cross the reserve
// within one Interval.
const (
	Interval     = 10 * time.Millisecond
	IdleInterval = 25 * time.Millisecond
)

// ReserveFraction of MemTotal (at least MinReserve) is kept for the
// Sentry's own memory, which the host counts too.
const (
	ReserveFraction = 0.25
	MinReserve      = 32 << 20
)

// Run guards until ctx ends. With act (nil: never) it parks while the
// sandbox is empty and quiet (see Activity) until act is marked.
func Run(ctx context.Context, log *slog.Logger, act *Activity) {
	t := time.NewTimer(Interval)
	defer t.Stop()
	m := marker()
	if m == nil {
		log.Warn("out-of-memory guard: no marker page: the host cannot tell the agent from the guest's processes")
	}
	empty := 0 // idle ticks in a row that found the sandbox empty and quiet
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		touch(m)
		if mostlyFree() {
			if empty = emptyTicks(act, empty); empty >= 2 && !park(ctx, act) {
				return
			}
			t.Reset(IdleInterval)
			continue
		}
		empty = 0
		total, avail, ok := meminfo()
		if !ok || avail > total/2 {
			t.Reset(IdleInterval)
			continue
		}
		t.Reset(Interval)
		if avail >= max(uint64(float64(total)*ReserveFraction), MinReserve) {
			continue
		}
		if pid, rss, ok := victim(total); ok {
			_ = unix.Kill(pid, unix.SIGKILL)
			log.Warn("out of memory: killed the largest process", "pid", pid, "rssMiB", rss>>20, "availableMiB", avail>>20)
			time.Sleep(100 * time.Millisecond) // let the Sentry free it
		}
	}
}

// emptyTicks counts idle ticks in a row on which act was quiet and the
// sandbox held no process but the agent.
func emptyTicks(act *Activity, n int) int {
	if act == nil || !act.quiet() || !alone() {
		return 0
	}
	return n + 1
}

// park waits until act is marked (true) or ctx ends (false).
func park(ctx context.Context, act *Activity) bool {
	select {
	case <-act.wake: // drop a mark from before the park
	default:
	}
	if !act.quiet() || !alone() { // a mark or a process since the last look
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-act.wake:
		return true
	}
}

// mostlyFree reports whether sysinfo(2) shows clearly over half of the
// memory free: the guard's idle case, told without /proc/meminfo. Under
// gVisor, generating /proc/meminfo first brings the Sentry's usage
// accounting up to date (pgalloc.MemoryFile.UpdateUsage: a mincore scan of
// the memory file, which made the guard's reads most of an idle sandbox's
// CPU), while sysinfo takes the memory file's committed bytes from one
// fstat, always current. They differ by what the throttled scan has not yet
// seen: while memory grows sysinfo shows less free (TestOOMGuardSysinfo:
// never more than meminfo beyond a few pages; IdleMargin covers that), after
// a free more. Within the margin, or on an error, meminfo decides as before;
// a kill needs under a quarter free by meminfo, which a growing sandbox
// reaches through sysinfo's under-half first.
func mostlyFree() bool {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return false
	}
	unit := uint64(si.Unit)
	return clearlyIdle(si.Totalram*unit, si.Freeram*unit)
}

// IdleMargin is the part of the total that sysinfo's free memory must
// exceed half of the total by for the guard to skip /proc/meminfo.
const IdleMargin = 16 // 1/16: 6.25 %

// clearlyIdle is the idle test on sysinfo's (total, free).
func clearlyIdle(total, free uint64) bool {
	return total > 0 && free > total/2+total/IdleMargin
}

// meminfo reads MemTotal and MemAvailable in bytes.
func meminfo() (total, avail uint64, ok bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	return parseMeminfo(f)
}

// parseMeminfo reads MemTotal and MemAvailable (bytes) from r.
func parseMeminfo(r io.Reader) (total, avail uint64, ok bool) {
	s := bufio.NewScanner(r)
	n := 0
	for s.Scan() && n < 2 {
		k, v, found := strings.Cut(s.Text(), ":")
		if !found {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "MemTotal":
			total, n = kb<<10, n+1
		case "MemAvailable":
			avail, n = kb<<10, n+1
		}
	}
	return total, avail, n == 2
}

// victim picks the process with the most resident memory, a process of a
// user other than root before any of root's, never the agent (PID 1) or a
// child of it not yet exec'd (agentCopy), or a process holding under 1/16
// of total (memory then sits elsewhere, e.g. in tmpfs files no kill would
// free).
func victim(total uint64) (pid int, rss uint64, ok bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, false
	}
	page := uint64(os.Getpagesize())
	self := os.Getpid()
	selfName, _, _ := nameAndParent(self)
	bestUser := false
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == 1 || p == self || agentCopy(p, self, selfName) {
			continue
		}
		r, uid, good := residentAndUID(p, page)
		if !good || r < total/16 {
			continue
		}
		user := uid != 0
		if (user && !bestUser) || (user == bestUser && r > rss) {
			pid, rss, ok, bestUser = p, r, true, user
		}
	}
	return pid, rss, ok
}

// agentCopy reports whether pid is a child of the agent (self, with stat
// line selfStat) still running as the agent: a command started and not yet
// exec'd. Go starts commands with vfork (CLONE_VM), so until its exec such a
// child counts the agent's whole resident memory (~27 MiB) as its own:
// killing it would kill a command about to start while memory is held
// elsewhere (after a tmpfs fill, every start). Read from /proc/<pid>/stat
// (parent and name), which needs no ptrace access, unlike /proc/<pid>/exe
// of a child that has already changed its uid.
func agentCopy(pid, self int, selfName string) bool {
	name, ppid, ok := nameAndParent(pid)
	return ok && ppid == self && name == selfName
}

// nameAndParent reads a process's name (comm) and parent pid from
// /proc/<pid>/stat.
func nameAndParent(pid int) (name string, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(string(b[end+1:])) // f[0] is the state, f[1] the parent
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return string(b[open+1 : end]), ppid, err == nil
}

// residentAndUID reads a process's resident bytes (statm) and real uid.
func residentAndUID(pid int, page uint64) (uint64, uint32, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/statm")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return 0, 0, false
	}
	return pages * page, st.Uid, true
}
