package integration

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reapAndCheck runs after the daemon d has exited: a daemon stopped by
// SIGTERM (or killed) leaves its sandboxes running for the next start to
// re-adopt, and the test's data dir is removed next, so nothing else would
// ever release them. It runs the same binary on the same data dir with
// --reap-all-and-exit (the daemon's own reaping code, not a test twin),
// then fails the test if anything of d's sandboxes is still on the host:
// processes, cgroups, mounts, runtime state, their netns files or links.
// Only d's data dir and sandbox ids are looked at: other tests' daemons
// share the net prefix.
func (d *daemon) reapAndCheck() { d.reapAndCheckIDs(d.stateIDs()) }

// reapAndCheckIDs is reapAndCheck for the sandboxes ids (the test knows
// ones the data dir no longer names).
func (d *daemon) reapAndCheckIDs(ids map[string]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.cmd.Path, append(append([]string{}, d.args...), "--reap-all-and-exit")...)
	cmd.Env = append(os.Environ(), "SBX_API_KEY="+apiKey) // not the test's failpoints or PATH
	out, err := cmd.CombinedOutput()
	if err != nil {
		d.t.Errorf("sbx serve --reap-all-and-exit on %s: %v\n%s", d.dataDir, err, tail(string(out), 3000))
	}
	if left := d.leftovers(ids); len(left) > 0 {
		d.t.Errorf("sandboxes of the daemon on %s left on the host after reaping: %v\nreaping:\n%s", d.dataDir, left, tail(string(out), 3000))
	}
}

// leftovers is what of the sandboxes ids remains on the host: d's
// inventory of them without what is node-wide or shared by every daemon
// with the same prefix (the nftables table, other daemons' links and netns
// files) or kept by design (the data dir's run tmpfs, runsc's null-netns
// pin, the lock and socket files runsc leaves in its root).
func (d *daemon) leftovers(ids map[string]bool) []string {
	var left []string
	for item := range d.inventoryOf(ids) {
		kind, name, _ := strings.Cut(item, ": ")
		switch kind {
		case "nft":
			continue
		case "state":
			if strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, ".sock") {
				continue // runsc's per-container lock and control socket: files in the run tmpfs, no process holds them
			}
		case "netns", "link", "mount":
			if !namesOneOf(d.netPrefix, name, ids) {
				continue
			}
		}
		left = append(left, item)
	}
	sort.Strings(left)
	return left
}

// namesOneOf says whether a netns path, link name or mount point names one
// of ids (a link by its hashed name, as internal/network names it).
func namesOneOf(prefix, name string, ids map[string]bool) bool {
	for id := range ids {
		if strings.Contains(name, id) || name == linkName(prefix, id) {
			return true
		}
	}
	return false
}

// linkName is the host-side link of sandbox id (internal/network.ifName).
func linkName(prefix, id string) string {
	sum := sha256.Sum256([]byte(id))
	return prefix + base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding).EncodeToString(sum[:])[:12]
}

// TestReapAllAndExit: a daemon stopped by SIGTERM leaves its sandboxes
// running (for the next start to re-adopt); sbx serve --reap-all-and-exit
// on its data dir releases every one of them (process, cgroups, mounts,
// netns, link, runtime state) and its records, so a later start has none.
func TestReapAllAndExit(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(nil)
	d.stop(syscall.SIGTERM)
	left := strings.Join(d.leftovers(d.stateIDs()), "\n")
	if !strings.Contains(left, "process: ") || !strings.Contains(left, "link: "+linkName(d.netPrefix, sb.ID)) {
		t.Fatalf("after SIGTERM the sandbox's process and link should survive; inventory:\n%s", left)
	}
	d.reapAndCheck()
	if mounts, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(mounts), " "+d.dataDir+"/") {
		t.Fatalf("after --reap-all-and-exit something is still mounted under %s (the data dir could not be removed)", d.dataDir)
	}
	var list []map[string]any
	if code := startDaemon(t, "runsc", d.dataDir).api("GET", "/v2/sandboxes", nil, &list); code != 200 || len(list) != 0 {
		t.Fatalf("after reaping, a restart lists %d %v", code, list)
	}
}
