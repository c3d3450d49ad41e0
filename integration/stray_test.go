package integration

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReapLostState: a daemon killed with a running sandbox whose runtime
// state ("state"), or everything else of it on the host but its cgroups
// ("all": its record, runtime state, layer, netns and link), is then
// deleted by hand: sbx serve --reap-all-and-exit kills every process the
// sandbox's cgroups hold and removes them, on every runtime. The runtime
// cannot kill what it has no state for; the reaper finds the sandbox by
// its cgroups (a process there names this daemon's data dir) and kills
// through them.
func TestReapLostState(t *testing.T) {
	for _, rt := range []string{"runsc", "crun", "runc"} {
		for _, lose := range []string{"state", "all"} {
			t.Run(rt+"/"+lose, func(t *testing.T) { reapLost(t, rt, lose) })
		}
	}
}

func reapLost(t *testing.T, rt, lose string) {
	// Another daemon's sandbox shares the cgroup parent: never this
	// reaping's. (Its network is: daemons on one host need a net prefix
	// each, and the test's share one; so its processes are looked at.)
	bystander := startDaemon(t, rt, "").create(nil)
	others := cgroupPids(bystander.ID)
	d := startDaemon(t, rt, "")
	sb := d.create(nil)
	pids := cgroupPids(sb.ID)
	if len(pids) == 0 {
		t.Fatalf("no process in the cgroups of %s", sb.ID)
	}
	d.stop(syscall.SIGKILL)
	loseRuntimeState(t, d.dataDir, sb.ID)
	if lose == "all" {
		loseTheRest(t, d, sb.ID)
	}
	d.reapAndCheckIDs(map[string]bool{sb.ID: true})
	for _, pid := range pids {
		if alive(pid) {
			b, _ := os.ReadFile(filepath.Join("/proc", itoa(int64(pid)), "cmdline"))
			t.Errorf("process %d (%q) of %s survived the reaping", pid, b, sb.ID)
		}
	}
	for _, pid := range others {
		if !alive(pid) {
			t.Errorf("process %d of another daemon's sandbox %s was killed by the reaping", pid, bystander.ID)
		}
	}
}

// cgroupPids lists the pids in every cgroup of sandbox id.
func cgroupPids(id string) []int {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/sbx/" + id)
	more, _ := filepath.Glob("/sys/fs/cgroup/sbx/" + id)
	seen := map[int]bool{}
	var out []int
	for _, dir := range append(dirs, more...) {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid := atoi(f); pid > 0 && !seen[pid] {
				seen[pid] = true
				out = append(out, pid)
			}
		}
	}
	return out
}

// loseRuntimeState deletes id's runtime state and bundle, every runtime's.
func loseRuntimeState(t *testing.T, dataDir, id string) {
	for _, rt := range []string{"runsc", "crun", "runc"} {
		state, _ := filepath.Glob(filepath.Join(dataDir, "run", "runtime", rt, id+"*"))
		for _, p := range append(state, filepath.Join(dataDir, "run", "runtime", "bundles-"+rt, id)) {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// loseTheRest deletes the records, id's writable layer (its mounts
// detached) and its netns and link: only its cgroups are left to find it.
func loseTheRest(t *testing.T, d *daemon, id string) {
	dbs, _ := filepath.Glob(filepath.Join(d.dataDir, "sbx.db*"))
	layer := filepath.Join(d.dataDir, "run", "sandboxes", id)
	for _, m := range mountsUnder(layer) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Fatalf("unmount %s: %v", m, err)
		}
	}
	for _, p := range append(dbs, layer) {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"netns", "delete", d.netPrefix + "-" + id}, {"link", "delete", linkName(d.netPrefix, id)}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
}

// mountsUnder lists the host's mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 1 && (fs[1] == dir || strings.HasPrefix(fs[1], dir+"/")) {
			out = append([]string{fs[1]}, out...)
		}
	}
	return out
}

// alive says whether pid runs: it exists and is no zombie (a killed
// sandbox process whose parent, the killed daemon, is not there to wait).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", itoa(int64(pid)), "stat"))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z") && !strings.HasPrefix(after, "X")
}
