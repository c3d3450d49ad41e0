package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// inventory is what one daemon holds on the host: cgroups, netns files,
// links, its nftables table, mounts, writable layers, runtime state and
// processes. It is scoped to the daemon (its data dir, net prefix and the
// sandbox ids it has logged), so daemons of other tests on the same host
// never disturb it. Items are "kind: name" strings.
type inventory map[string]bool

// stateDirs are the data dir's per-sandbox directories: writable layers,
// runtime --root dirs and OCI bundles, all in the daemon's run dir, and the
// crun and runc layers' disk images.
var stateDirs = []string{"run/sandboxes", "run/runtime/runsc", "run/runtime/crun", "run/runtime/runc",
	"run/runtime/bundles-runsc", "run/runtime/bundles-crun", "run/runtime/bundles-runc", "layer-images"}

var logID = regexp.MustCompile(`sandbox=([a-z0-9]{20})\b`)

// ids is every sandbox id the daemon has logged or the test knows of, and
// every id with state in its data dir.
func (d *daemon) ids(known ...string) map[string]bool {
	out := map[string]bool{}
	for _, id := range known {
		out[id] = true
	}
	for _, m := range logID.FindAllStringSubmatch(d.log.String(), -1) {
		out[m[1]] = true
	}
	for id := range d.stateIDs() {
		out[id] = true
	}
	return out
}

// stateIDs is every id with state in the daemon's data dir: the sandboxes
// it holds, not those it only logged (a daemon starting beside another's
// survivors logs them as orphan networks when their prefixes are equal).
func (d *daemon) stateIDs() map[string]bool {
	out := map[string]bool{}
	for _, dir := range stateDirs {
		ents, _ := os.ReadDir(filepath.Join(d.dataDir, dir))
		for _, e := range ents {
			if len(e.Name()) == 20 {
				out[e.Name()] = true
			}
		}
	}
	return out
}

// inventory takes the daemon's host inventory now.
func (d *daemon) inventory(known ...string) inventory {
	return d.inventoryOf(d.ids(known...))
}

// inventoryOf is inventory for the sandboxes ids.
func (d *daemon) inventoryOf(ids map[string]bool) inventory {
	inv := inventory{}
	add := func(kind, name string) { inv[kind+": "+name] = true }
	for id := range ids {
		cg, _ := filepath.Glob("/sys/fs/cgroup/*/sbx/" + id)
		guest, _ := filepath.Glob("/sys/fs/cgroup/*/sbx/" + id + "/guest") // runsc's guest memory cgroup
		for _, c := range append(cg, guest...) {
			add("cgroup", c)
		}
	}
	ns, _ := filepath.Glob("/run/netns/" + d.netPrefix + "-*")
	for _, n := range ns {
		add("netns", n)
	}
	if out, err := exec.Command("ip", "-o", "link").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], d.netPrefix) {
				add("link", strings.Split(strings.TrimSuffix(f[1], ":"), "@")[0])
			}
		}
	}
	d.nftInto(inv)
	d.mountsInto(inv, ids)
	d.loopsInto(inv)
	for _, dir := range stateDirs {
		ents, _ := os.ReadDir(filepath.Join(d.dataDir, dir))
		for _, e := range ents {
			add("state", dir+"/"+e.Name())
		}
	}
	d.processesInto(inv, ids)
	for k := range inv {
		if strings.HasSuffix(k, "/null-netns") {
			delete(inv, k) // runsc's node-wide empty netns pin, made at the first start, kept by design
		}
		if strings.Contains(k, "/oci-seccomp-") || strings.Contains(k, "/.oci-seccomp-") {
			delete(inv, k) // runsc's node-wide OCI seccomp program cache (gVisor patch 12), kept by design
		}
	}
	return inv
}

// nftInto adds the daemon's nftables table, normalised: every reference to
// a sandbox link (in chains, maps, sets) and every sandbox address, with its
// number of occurrences, and the number of rules.
func (d *daemon) nftInto(inv inventory) {
	out, err := exec.Command("nft", "list", "table", "inet", d.netPrefix).Output()
	if err != nil {
		inv["nft: no table"] = true
		return
	}
	re := regexp.MustCompile(d.netPrefix + `[a-z2-7]{12}\b|\b\d+\.\d+\.\d+\.\d+\b`)
	counts := map[string]int{}
	for _, m := range re.FindAllString(string(out), -1) {
		counts[m]++
	}
	for k, n := range counts {
		inv["nft: "+k+" x"+strconv.Itoa(n)] = true
	}
	inv["nft: lines "+strconv.Itoa(strings.Count(string(out), "\n"))] = true
}

// mountsInto adds mounts under the data dir or naming one of ids.
func (d *daemon) mountsInto(inv inventory, ids map[string]bool) {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		mine := strings.Contains(l, d.dataDir)
		for id := range ids {
			mine = mine || strings.Contains(l, id)
		}
		if mine {
			inv["mount: "+f[4]] = true
		}
	}
}

// loopsInto adds the loop devices bound to a file in the data dir (the
// layers' images). One bound to a deleted image is being released (loop
// devices clear themselves asynchronously after the unmount): it is waited
// for, up to a second.
func (d *daemon) loopsInto(inv inventory) {
	held := boundLoops(d.dataDir)
	for i := 0; i < 50 && slices.ContainsFunc(held, func(l string) bool { return strings.HasSuffix(l, " (deleted)") }); i++ {
		time.Sleep(20 * time.Millisecond)
		held = boundLoops(d.dataDir)
	}
	for _, l := range held {
		inv["loop: "+l] = true
	}
}

// boundLoops lists the loop devices whose backing file is under dir.
func boundLoops(dir string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), dir+"/") {
			out = append(out, strings.TrimSpace(string(b)))
		}
	}
	return out
}

// processesInto adds host processes (other than the daemon) whose command
// line names the data dir or one of ids.
func (d *daemon) processesInto(inv inventory, ids map[string]bool) {
	self := d.cmd.Process.Pid // after it exited, the pid is nobody's or not the daemon's
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		b, err := os.ReadFile(p)
		if err != nil || pid == self || pid == os.Getpid() || len(b) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		mine := strings.Contains(cmd, d.dataDir)
		for id := range ids {
			mine = mine || strings.Contains(cmd, id)
		}
		if mine {
			inv["process: "+strconv.Itoa(pid)+" "+truncate(cmd, 120)] = true
		}
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// diff lists items added and removed relative to base, sorted.
func (inv inventory) diff(base inventory) (added, removed []string) {
	for k := range inv {
		if !base[k] {
			added = append(added, k)
		}
	}
	for k := range base {
		if !inv[k] {
			removed = append(removed, k)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

// backToBaseline waits (up to 20 s: reaping is asynchronous after a crash
// or OOM) until the daemon's inventory equals base, and fails otherwise.
func (d *daemon) backToBaseline(t *testing.T, base inventory, known ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		added, removed := d.inventory(known...).diff(base)
		if len(added)+len(removed) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("host inventory not back to baseline:\nleft behind: %v\ngone (was in baseline): %v", added, removed)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
