package integration

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

//go:embed testdata/probe.py
var probeScript []byte

// probeResult is one line of probe.py's output.
type probeResult struct {
	Probe, Outcome, Detail string
}

// expectedOutcome is what probe must report on backend rt as user ("user",
// "root", or "sudo": user's process become root through sudo, which must be
// exactly the sandbox's root). Every attack is "blocked" on every backend
// unless listed here, with the reason.
func expectedOutcome(rt, user, probe string) string {
	if user == "sudo" {
		user = "root"
	}
	switch {
	case user == "root" && (probe == "setuid" || probe == "sudo"):
		return "n/a" // escalation is about becoming root; sandbox root is the tenant's own
	case probe == "sudo":
		return "allowed" // passwordless sudo for user, as on E2B: the root it gives is probed below
	case rt == "runsc" && probe == "emulated-devices":
		return "allowed" // gVisor's own /dev/fuse and /dev/net/tun (Sentry FUSE, netstack TUN): no host device behind them
	case rt == "runsc" && user == "root" && probe == "sysrq-trigger":
		return "allowed" // gVisor's /proc: the Sentry's sysrq-trigger, never the host's
	case rt == "runsc" && user == "root" && probe == "self-exe":
		return "allowed" // gVisor has no ETXTBSY; the file is the sandbox's copy-on-write python3, the template is hashed unchanged
	}
	return "blocked"
}

// securityProbes uploads probe.py and runs it as user and as root.
func securityProbes(t *testing.T, sb *sandbox, rt string) {
	hostID, _ := os.ReadFile("/etc/machine-id")
	b64 := base64.StdEncoding.EncodeToString(probeScript)
	if out, code := sb.run("root", "echo "+b64+" | base64 -d > /tmp/probe.py && chmod 0755 /tmp/probe.py", 20*time.Second); code != 0 {
		t.Fatalf("upload probe.py: %d %s", code, out)
	}
	env := fmt.Sprintf("HOST_MACHINE_ID=%s HOST_ADDRS=%s ", strings.TrimSpace(string(hostID)), hostAddrs(sb.d))
	for _, as := range []struct{ name, user, prefix string }{
		{"user", "user", ""}, {"root", "root", ""},
		// root reached from user's own process tree: the setuid path
		{"sudo", "user", "sudo -n env "},
	} {
		out, code, err := sb.runErr(as.user, as.prefix+env+"python3 /tmp/probe.py", 3*time.Minute)
		if err != nil || code != 0 {
			t.Fatalf("probe.py as %s: %d %v\n%s", as.name, code, err, out)
		}
		checkProbes(t, rt, as.name, out)
	}
	cwdAttacks(t, sb, strings.TrimSpace(string(hostID)))
}

func checkProbes(t *testing.T, rt, user, out string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r probeResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Errorf("as %s: unparsable probe output %q", user, line)
			continue
		}
		n++
		want := expectedOutcome(rt, user, r.Probe)
		if r.Outcome != want {
			t.Errorf("%s as %s: %s, want %s (%s)", r.Probe, user, r.Outcome, want, r.Detail)
		} else {
			t.Logf("%s as %s: %s (%s)", r.Probe, user, r.Outcome, r.Detail)
		}
	}
	if n < 31 {
		t.Errorf("as %s: only %d probes reported:\n%s", user, n, out)
	}
}

// hostAddrs lists the host's own IPv4 addresses with ports that must be
// unreachable from a sandbox: sshd and the daemon's own port. Addresses on
// veth links are left out: they are sandboxes' host ends (the probing
// sandbox's own is its gateway, which probe.py targets itself), which come
// and go with other tests' sandboxes; one that goes while the probe
// connects routes the connect out through the uplink, where this kind of VM
// accepts TCP to any address (a false "allowed" in CI).
func hostAddrs(d *daemon) string {
	out, _ := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	_, port, _ := strings.Cut(strings.TrimPrefix(d.url, "http://"), ":")
	veths := vethLinks()
	var addrs []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[2] != "inet" || veths[f[1]] {
			continue
		}
		ip, _, _ := strings.Cut(f[3], "/")
		addrs = append(addrs, ip+":22", ip+":"+port)
	}
	return strings.Join(addrs, ",")
}

// vethLinks is the set of the host's veth link names.
func vethLinks() map[string]bool {
	out, _ := exec.Command("ip", "-o", "link", "show", "type", "veth").Output()
	names := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			names[name] = true
		}
	}
	return names
}

// cwdAttacks starts processes through the process API with a working
// directory that points at a file descriptor or another process's root
// (the runc CVE-2024-21626 class): none may reach the host's root.
func cwdAttacks(t *testing.T, sb *sandbox, hostID string) {
	cwds := []string{"/proc/1/root", "/proc/1/cwd", "/proc/self/root"}
	for n := 0; n < 16; n++ {
		cwds = append(cwds, fmt.Sprintf("/proc/self/fd/%d", n), fmt.Sprintf("/proc/1/fd/%d", n))
	}
	for _, cwd := range cwds {
		for _, user := range []string{"user", "root"} {
			var out strings.Builder
			code, err := sb.exec(procReq{user: user, cwd: cwd, timeout: 20 * time.Second,
				cmd: "cat " + strings.Repeat("../", 12) + "etc/machine-id 2>/dev/null; ls /proc/self/fd | wc -l"}, &out)
			if strings.Contains(out.String(), hostID) {
				t.Errorf("cwd=%s as %s reached the host's root: %q", cwd, user, out.String())
			}
			if err == nil && code == 0 {
				if f := strings.Fields(out.String()); len(f) == 0 || f[len(f)-1] != "4" {
					t.Errorf("cwd=%s as %s: a fresh process holds unexpected fds: %q", cwd, user, out.String())
				}
			}
		}
	}
}
