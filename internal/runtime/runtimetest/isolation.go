package runtimetest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// probe is run as the sandbox's init; it records its view of the world.
const probe = `{
grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status
echo "uidmap: $(awk '{print $1, $2, $3}' /proc/self/uid_map 2>/dev/null)"
echo "kernel: $(uname -r)"
echo "procs: $(ls /proc | grep -c '^[0-9]')"
echo "mknod: $(mknod /tmp/x c 1 1 2>/dev/null && echo ALLOWED || echo denied)"
echo "mount: $(mount -t tmpfs none /mnt 2>/dev/null && echo ALLOWED || echo denied)"
echo "kcore: $(head -c1 /proc/kcore 2>/dev/null | wc -c)"
echo "userns: $(unshare -Ur true 2>/dev/null && echo ALLOWED || echo denied)"
echo "netns: $(unshare -n true 2>/dev/null && echo ALLOWED || echo denied)"
echo "devnull: $(echo x > /dev/null && echo ok)"
echo "devs: $(ls /dev | sort | tr '\n' ' ')"
echo "hostview: $(ls /sys/class/net 2>/dev/null | grep -cv -E '^(lo|eth0)$') $(ls -d /sys/fs/cgroup/sbx /sys/fs/cgroup/*/sbx 2>/dev/null | wc -l)"
echo "sysro: $(touch /sys/x 2>/dev/null && echo WRITABLE || echo ro)"
echo "rawsock: $(python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)' 2>/dev/null && echo ALLOWED || echo denied)"
echo "keyctl: $(python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); print(l.syscall(250, 0, 0, 0, 0, 0), ctypes.get_errno())' 2>&1)"
echo END
} > /var/tmp/probe 2>&1; exec sleep 1000`

// testIsolation runs the probe in two sandboxes of one backend instance:
// the second start may reuse what the first prepared (crun: the compiled
// seccomp filter) and must be as confined.
func testIsolation(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) { probeIsolation(t, fx, rt) })
	}
}

func probeIsolation(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	ctx := context.Background()
	s, rootfs := fx.spec(t, rt, probe, runtime.Limits{})
	sb, err := rt.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Delete(context.Background()) })
	out := waitFile(t, rootfs, "var/tmp/probe", 15*time.Second)
	// NoNewPrivs is 0 on purpose (sudo, as on E2B); the bounding set is what
	// bounds a setuid exec, so it must be exactly the sandbox's 12 capabilities.
	for _, want := range []string{"CapBnd:\t00000000a00405fb", "Seccomp:\t2", "mknod: denied", "mount: denied", "kcore: 0",
		"userns: denied", "netns: denied", "devnull: ok", "sysro: ro", "hostview: 0 0\n", "rawsock: denied", "keyctl: -1 1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	checkDevices(t, out)
	for _, bad := range []string{"CapEff:\t000001ffffffffff", "CapEff:\t0000003fffffffff"} {
		if strings.Contains(out, bad) {
			t.Errorf("full capabilities:\n%s", out)
		}
	}
	if rt.Capabilities().UserNS && !strings.Contains(out, "uidmap: 0 100000 65536") {
		t.Errorf("sandbox root not mapped to an unprivileged uid:\n%s", out)
	}
	if rt.Name() == "runsc" && !strings.Contains(out, "gvisor") {
		t.Errorf("not running on gVisor's kernel:\n%s", out)
	}
	var procs int
	for _, line := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(line, "procs: "); ok {
			procs, _ = strconv.Atoi(n)
		}
	}
	if procs == 0 || procs > 10 {
		t.Errorf("%d processes visible: the host's leak in:\n%s", procs, out)
	}
}

// standardDevs are the /dev entries a sandbox may see: the standard nodes,
// their mounts and symlinks; crun adds a /dev/core symlink to the masked
// /proc/kcore; gVisor emulates fuse and net/tun inside its own kernel (they
// need CAP_SYS_ADMIN / CAP_NET_ADMIN, which a sandbox never has) and lists
// its devices in /dev/char.
var standardDevs = map[string]bool{"null": true, "zero": true, "full": true, "random": true, "urandom": true,
	"tty": true, "ptmx": true, "pts": true, "shm": true, "mqueue": true, "fd": true, "stdin": true,
	"stdout": true, "stderr": true, "core": true, "console": true, "fuse": true, "net": true, "char": true}

func checkDevices(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		devs, ok := strings.CutPrefix(line, "devs: ")
		if !ok {
			continue
		}
		for _, d := range strings.Fields(devs) {
			if !standardDevs[d] {
				t.Errorf("/dev/%s visible in the sandbox", d)
			}
		}
		return
	}
	t.Errorf("no /dev listing:\n%s", out)
}
