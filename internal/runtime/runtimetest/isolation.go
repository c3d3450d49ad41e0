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
echo END
} > /var/tmp/probe 2>&1; exec sleep 1000`

func testIsolation(t *testing.T, fx *Fixture, rt runtime.Runtime) {
	ctx := context.Background()
	s, rootfs := fx.spec(t, rt, probe, runtime.Limits{})
	sb, err := rt.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Delete(context.Background()) })
	out := waitFile(t, rootfs, "var/tmp/probe", 15*time.Second)
	for _, want := range []string{"NoNewPrivs:\t1", "mknod: denied", "mount: denied", "kcore: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	if rt.Name() != "runsc" && !strings.Contains(out, "Seccomp:\t2") {
		t.Errorf("no seccomp filter:\n%s", out)
	}
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
