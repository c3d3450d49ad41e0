package integration

import (
	"os"
	"strings"
	"testing"
	"time"
)

// balloons commit 400 MiB in a 128 MiB sandbox as fast as a process can:
// in one mmap(MAP_POPULATE) (alone, then written), at memory speed
// (b"x" * n, a bytearray touched page by page) and two at once. mayLive:
// the process may survive with less memory than it asked for (a populate
// past the limit fails softly, as Linux's does).
var balloons = []struct {
	name, cmd string
	mayLive   bool
}{
	{"populate", "python3 -c 'import mmap; m = mmap.mmap(-1, 400 << 20, flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS|mmap.MAP_POPULATE)'", true},
	{"populate and write", "python3 -c 'import mmap; m = mmap.mmap(-1, 400 << 20, flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS|mmap.MAP_POPULATE); m.write(b\"x\" * (400 << 20))'", false},
	{"bytes", "python3 -c 'b = b\"x\" * (400 << 20); print(len(b))'", false},
	{"bytearray touched", "python3 -c 'b = bytearray(400 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1'", false},
	{"two at once", "python3 -c 'b = b\"x\" * (400 << 20)' & a=$!; python3 -c 'import mmap; m = mmap.mmap(-1, 400 << 20, flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS|mmap.MAP_POPULATE); m.write(b\"y\" * (400 << 20))' & b=$!; wait $a; x=$?; wait $b; y=$?; echo $x $y; [ $x = 0 ] || [ $y = 0 ]", false}, // exit 0: one of them got its memory
}

// TestContainedBalloon: every balloon, three rounds, ends inside the
// sandbox as on a machine: the offending process dies, a process started
// before keeps running, the sandbox answers commands and the file API
// after each, and so after a pause and resume (processes restored from the
// image are contained too); a neighbour sandbox answers an echo every
// 200 ms throughout without a failure; deleting both leaves the host as it
// was. On runsc this is the guest memory cgroup (internal/runtime/oci,
// guestmem.go) with the agent's OOM guard; on crun the kernel's OOM killer.
func TestContainedBalloon(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "")
			base := d.inventory()
			neighbour := d.create(map[string]any{"memoryMB": 128})
			c := startCanary(neighbour)
			sb := d.create(map[string]any{"memoryMB": 128})
			hasGuestCgroup(t, rt, sb.ID)
			sibling := sb.startSibling(t)
			for round := 0; round < 3; round++ {
				sb.balloons(t, sibling)
			}
			sb.usableAfter(t)
			if rt == "runsc" {
				sb.pauseResume(t)
				sb.balloons(t, sibling)
				sb.usableAfter(t)
			}
			c.check(t, 5*time.Second)
			for _, s := range []*sandbox{sb, neighbour} {
				if code := d.api("DELETE", "/sandboxes/"+s.ID, nil, nil); code != 204 {
					t.Fatalf("delete %s: %d", s.ID, code)
				}
			}
			d.backToBaseline(t, base)
		})
	}
}

// balloons runs every balloon once; after each the process started before
// (sibling) must still run.
func (s *sandbox) balloons(t *testing.T, sibling string) {
	t.Helper()
	for _, b := range balloons {
		t0 := time.Now()
		out, code, err := s.runErr("user", b.cmd, 60*time.Second)
		if err == nil && code == 0 && !b.mayLive {
			t.Errorf("%s: 400 MiB under a 128 MiB limit succeeded: %q", b.name, out)
		}
		t.Logf("%s: exit %d %v in %v", b.name, code, err, time.Since(t0).Round(time.Millisecond))
		s.siblingAlive(t, sibling)
	}
}

// hasGuestCgroup: on runsc on a cgroup v1 memory controller, the sandbox's
// stubs run in its guest memory cgroup.
func hasGuestCgroup(t *testing.T, rt, id string) {
	t.Helper()
	if rt != "runsc" {
		return
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.oom_control"); err != nil {
		t.Skip("no cgroup v1 memory controller: runsc sandboxes have no guest memory cgroup (docs/SECURITY.md)")
	}
	b, err := os.ReadFile("/sys/fs/cgroup/memory/sbx/" + id + "/guest/memory.oom_control")
	if err != nil || !strings.Contains(string(b), "oom_kill_disable 1") {
		t.Fatalf("no guest memory cgroup with the OOM killer off: %q %v", b, err)
	}
}

// pauseResume pauses the sandbox (memory image) and resumes it.
func (s *sandbox) pauseResume(t *testing.T) {
	t.Helper()
	if code := s.d.api("POST", "/sandboxes/"+s.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause: %d", code)
	}
	if code := s.d.api("POST", "/v2/sandboxes/"+s.ID+"/connect", map[string]any{"timeout": 300}, nil); code != 201 {
		t.Fatalf("resume: %d", code)
	}
}
