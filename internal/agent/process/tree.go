package process

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxStopRounds bounds the freezing of a tree that keeps forking: each
// round stops every process found; a stopped process cannot fork, so the
// tree stops growing once a round finds nobody new.
const maxStopRounds = 100

// killTree ends the whole tree of the process leader: every live
// descendant, whatever session or group it moved to. A command's leader is
// a child subreaper (SubreaperExec), so a descendant whose parent exits
// (a double fork) is re-parented to the leader, not to the agent, and
// stays findable by its parent chain while the leader lives.
//
// To leave no gap for a fork, the tree is frozen first: rounds of SIGSTOP
// to every process reachable from the leader through /proc's PPid links
// until a round finds none it had not stopped; the leader is stopped too,
// so nothing is re-parented away meanwhile. Then every process still in the
// (now still) tree gets SIGKILL. A pid that was stopped but has left the
// tree (it died between the scan and the stop, and the pid was reused) gets
// SIGCONT back. Best effort: errors (a process gone already) are ignored.
func killTree(leader int) {
	stopped := map[int]bool{}
	for range maxStopRounds {
		fresh := 0
		for _, pid := range descendants(leader) {
			if !stopped[pid] {
				_ = unix.Kill(pid, unix.SIGSTOP)
				stopped[pid] = true
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
	}
	final := map[int]bool{}
	for _, pid := range descendants(leader) {
		final[pid] = true
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	for pid := range stopped {
		if !final[pid] {
			_ = unix.Kill(pid, unix.SIGCONT)
		}
	}
}

// descendants returns root (if it lives) and every process whose PPid
// chain in /proc leads to it.
func descendants(root int) []int {
	children := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	alive := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, ok := parentOf(pid)
		if !ok {
			continue
		}
		if pid == root {
			alive = true
		}
		children[ppid] = append(children[ppid], pid)
	}
	if !alive {
		return nil
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// parentOf reads the PPid of pid from /proc/<pid>/stat (false when the
// process is gone or a zombie, which no signal can reach).
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // state, ppid, ...
	if len(f) < 2 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}
