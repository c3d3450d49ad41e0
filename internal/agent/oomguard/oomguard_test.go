package oomguard

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestParseMeminfo(t *testing.T) {
	for _, tc := range []struct {
		in           string
		total, avail uint64
		ok           bool
	}{
		{"MemTotal:         262144 kB\nMemFree:          243456 kB\nMemAvailable:     243000 kB\n", 262144 << 10, 243000 << 10, true},
		{"MemTotal: 100 kB\n", 0, 0, false},
		{"garbage\nMemAvailable: x kB\n", 0, 0, false},
	} {
		total, avail, ok := parseMeminfo(strings.NewReader(tc.in))
		if ok != tc.ok || (ok && (total != tc.total || avail != tc.avail)) {
			t.Errorf("%q: %d %d %v", tc.in, total, avail, ok)
		}
	}
}

// TestVictim: a user's process holding the most memory is chosen (on a
// shared host: one at least as big as ours), never this one (the agent).
func TestVictim(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (runs the hog as nobody)")
	}
	hog := exec.Command("/usr/bin/python3", "-c", "b = b'x' * (64 << 20); import sys; sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.read()")
	hog.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdin, _ := hog.StdinPipe()
	out, _ := hog.StdoutPipe()
	if err := hog.Start(); err != nil {
		t.Skip("no python3:", err)
	}
	defer func() { stdin.Close(); _ = hog.Wait() }()
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	pid, rss, ok := victim(64 << 20) // threshold total/16 = 4 MiB
	if !ok || rss < 60<<20 || pid == os.Getpid() {
		t.Fatalf("victim %d (%d MiB, %v), want a user's process of >= 64 MiB such as %d", pid, rss>>20, ok, hog.Process.Pid)
	}
}

func TestClearlyIdle(t *testing.T) {
	for _, tc := range []struct {
		total, free uint64
		want        bool
	}{
		{512 << 20, 500 << 20, true},
		{512 << 20, 289 << 20, true},
		{512 << 20, 288 << 20, false}, // within the margin above half: meminfo decides
		{512 << 20, 257 << 20, false},
		{512 << 20, 10 << 20, false},
		{0, 0, false}, // nothing known: meminfo decides
	} {
		if got := clearlyIdle(tc.total, tc.free); got != tc.want {
			t.Errorf("clearlyIdle(%d, %d) = %v, want %v", tc.total, tc.free, got, tc.want)
		}
	}
}

func TestMostlyFreeAgreesWithMeminfo(t *testing.T) {
	// On any Linux, sysinfo's free memory is MemFree, never above
	// MemAvailable: the prefilter may only send the guard to meminfo, never
	// skip a reading meminfo would act on.
	total, avail, ok := meminfo()
	if !ok {
		t.Skip("no /proc/meminfo")
	}
	if mostlyFree() && avail <= total/2 {
		t.Errorf("sysinfo says over half free, MemAvailable %d of %d", avail, total)
	}
}

// TestAgentCopy: a child of the agent still running as the agent (here:
// this test binary run again), such as a command the agent has forked and
// not yet exec'd, is an agent copy the guard never kills; a child running
// another program is not, nor is any process for another parent.
func TestAgentCopy(t *testing.T) {
	if os.Getenv("OOMGUARD_HELPER") == "sleep" {
		_, _ = os.Stdin.Read(make([]byte, 1))
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Skip("no executable:", err)
	}
	name, _, ok := nameAndParent(os.Getpid())
	if !ok {
		t.Skip("no /proc/self/stat")
	}
	for _, c := range []struct {
		argv []string
		want bool
	}{
		{[]string{self, "-test.run=^TestAgentCopy$"}, true},
		{[]string{"/bin/cat"}, false},
	} {
		cmd := exec.Command(c.argv[0], c.argv[1:]...)
		cmd.Env = append(os.Environ(), "OOMGUARD_HELPER=sleep")
		stdin, _ := cmd.StdinPipe()
		if err := cmd.Start(); err != nil { // returns once the child has exec'd
			t.Fatal(err)
		}
		if got := agentCopy(cmd.Process.Pid, os.Getpid(), name); got != c.want {
			t.Errorf("agentCopy(%v) = %v, want %v", c.argv, got, c.want)
		}
		if agentCopy(cmd.Process.Pid, os.Getpid()+1, name) {
			t.Errorf("agentCopy(%v) for another parent", c.argv)
		}
		stdin.Close()
		_ = cmd.Wait()
	}
}
