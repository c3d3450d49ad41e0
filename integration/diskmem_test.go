package integration

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFilesFillDiskNotMemory: a sandbox's files count against its disk
// quota, not its memory limit, on every runtime. 600 MiB written to
// /home/user in a 256 MiB sandbox (and in 512 MiB) with the default 1 GiB
// disk succeeds and reads back; writing past the quota fails with ENOSPC; a
// process started before, the commands and the file API live throughout;
// the kernel never OOM-killed anything in the sandbox's memory cgroup, and a
// balloon afterwards is still refused where it does not fit.
//
// On runsc the writable layer is a host tmpfs whose pages are charged to
// the Sentry's cgroup, sized for them (internal/runtime/oci diskmem.go):
// that cgroup never even reaches its limit (memory.failcnt 0). Before that
// fix the host OOM-killed the Sentry at ~300 MiB. On crun and runc, with
// --disk-layers, the layer is an ext4 image on the host's disk
// (internal/layer disk.go): the
// files are page cache in the sandbox's own cgroup, which the kernel writes
// back and drops at the limit (failcnt counts those reclaims); on a tmpfs
// they were unswappable and the kernel OOM-killed every process in the
// sandbox.
func TestFilesFillDiskNotMemory(t *testing.T) {
	for _, rt := range []string{"runsc", "crun", "runc"} {
		t.Run(rt, func(t *testing.T) { filesFillDisk(t, rt) })
	}
}

func filesFillDisk(t *testing.T, rt string) {
	var extra []string
	if rt != "runsc" {
		extra = []string{"--disk-layers"}
	}
	d := startDaemon(t, rt, "", extra...)
	for _, mem := range []int{256, 512} {
		sb := d.create(map[string]any{"memoryMB": mem})
		sibling := sb.startSibling(t)
		out, code, err := sb.runErr("user", "head -c 600M /dev/urandom > /home/user/big && sync && stat -c %s /home/user/big && cat /home/user/big | wc -c", 120*time.Second)
		if err != nil || code != 0 || out != "629145600\n629145600\n" {
			t.Fatalf("%d MiB: 600 MiB to /home/user with a 1 GiB disk: %q %d %v", mem, tail(out, 300), code, err)
		}
		sb.siblingAlive(t, sibling)
		logCgroup(t, sb.ID)
		out, code, err = sb.runErr("user", "head -c 600M /dev/zero > /home/user/big2", 120*time.Second)
		if err == nil && code == 0 || !strings.Contains(out, "No space left on device") {
			t.Fatalf("%d MiB: 1.2 GiB written with a 1 GiB disk: %q %d %v", mem, tail(out, 300), code, err)
		}
		sb.siblingAlive(t, sibling)
		if out, code, err := sb.runErr("user", "echo alive", 20*time.Second); err != nil || code != 0 || out != "alive\n" {
			t.Fatalf("%d MiB: unusable with the disk full: %q %d %v", mem, out, code, err)
		}
		noHostOOM(t, sb.ID, rt == "runsc")
		// On crun and runc the files left the memory to processes: a 400 MiB
		// balloon fits in 512 MiB next to the full disk, not in 256.
		fits := rt != "runsc" && mem == 512
		if out, code, err := sb.runErr("user", balloons[2].cmd, 60*time.Second); (err == nil && code == 0) != fits {
			t.Errorf("%d MiB: a 400 MiB balloon with the disk full: %q %d %v, want it to succeed: %v", mem, out, code, err, fits)
		}
		sb.siblingAlive(t, sibling)
		if _, code, err := sb.runErr("user", "rm /home/user/big /home/user/big2", 20*time.Second); err != nil || code != 0 {
			t.Fatalf("%d MiB: rm: %d %v", mem, code, err)
		}
		sb.usableAfter(t)
		if rt == "runsc" { // elsewhere the balloon is OOM-killed in the sandbox's own cgroup
			noHostOOM(t, sb.ID, true)
		}
	}
}

// noHostOOM: on a cgroup v1 memory controller, the host OOM killer never
// ran in the sandbox's cgroup, and with noLimit the cgroup never even
// reached its limit.
func noHostOOM(t *testing.T, id string, noLimit bool) {
	t.Helper()
	dir := "/sys/fs/cgroup/memory/sbx/" + id
	if _, err := os.Stat(dir); err != nil {
		t.Logf("no v1 memory cgroup %s: not checked", dir)
		return
	}
	if b, err := os.ReadFile(dir + "/memory.failcnt"); noLimit && (err != nil || strings.TrimSpace(string(b)) != "0") {
		t.Errorf("memory.failcnt of %s: %q %v, want 0", id, b, err)
	}
	if b, err := os.ReadFile(dir + "/memory.oom_control"); err != nil || strings.Contains(string(b), "oom_kill 1") || !strings.Contains(string(b), "oom_kill 0") {
		t.Errorf("memory.oom_control of %s: %q %v, want oom_kill 0", id, b, err)
	}
}

// logCgroup logs the usage, peak and limit of the sandbox's v1 memory cgroup.
func logCgroup(t *testing.T, id string) {
	dir := "/sys/fs/cgroup/memory/sbx/" + id + "/"
	var fs []string
	for _, f := range []string{"memory.failcnt", "memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.limit_in_bytes", "guest/memory.max_usage_in_bytes", "guest/memory.limit_in_bytes"} {
		b, _ := os.ReadFile(dir + f)
		fs = append(fs, f+"="+strings.TrimSpace(string(b)))
	}
	t.Logf("%s: %s", id, strings.Join(fs, " "))
}

// TestFilesFillDiskAfterRestart: a restarted daemon re-adopting a runsc
// sandbox gives its cgroup the room for its files again, from the disk
// quota in the bundle: the parent's limit, lowered by hand to what it was
// without that room, is back to memoryMB + headroom + disk after the
// restart, and 600 MiB then fit in 256 MiB.
func TestFilesFillDiskAfterRestart(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(map[string]any{"memoryMB": 256})
	dir := "/sys/fs/cgroup/memory/sbx/" + sb.ID
	if _, err := os.Stat(dir + "/guest"); err != nil {
		t.Skip("no cgroup v1 memory controller: no guest cgroup to check")
	}
	const mib = 1 << 20
	want := strconv.Itoa((256 + 64 + 32 + 1024) * mib)
	if b, _ := os.ReadFile(dir + "/memory.limit_in_bytes"); strings.TrimSpace(string(b)) != want {
		t.Fatalf("parent limit %q, want %s", b, want)
	}
	d.stop(syscall.SIGTERM)
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		if err := os.WriteFile(dir+"/"+f, []byte(strconv.Itoa((256+64+32)*mib)), 0); err != nil {
			t.Fatal(err)
		}
	}
	d2 := startDaemon(t, "runsc", d.dataDir)
	sb2 := &sandbox{d: d2, ID: sb.ID, Token: sb.Token}
	if b, _ := os.ReadFile(dir + "/memory.limit_in_bytes"); strings.TrimSpace(string(b)) != want {
		t.Fatalf("parent limit after the restart %q, want %s", b, want)
	}
	out, code, err := sb2.runErr("user", "head -c 600M /dev/zero > /home/user/big && stat -c %s /home/user/big", 120*time.Second)
	if err != nil || code != 0 || out != "629145600\n" {
		t.Fatalf("600 MiB after the restart: %q %d %v", tail(out, 300), code, err)
	}
	sb2.usableAfter(t)
	noHostOOM(t, sb.ID, true)
}
