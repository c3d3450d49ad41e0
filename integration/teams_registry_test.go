package integration

import (
	"strings"
	"testing"
)

// TestTeamsRegistryGuard: a team's template build must not make the daemon
// reach the host's or its network's private services (server-side request
// forgery through fromImage: a registry on loopback holding the operator's
// private images, a LAN service). A team's pull from a real registry on
// loopback is refused at the connect, with a message naming --registry-open;
// the operator's (default team's) pull of the same reference reaches the
// registry (which has no such image); on a daemon started with
// --registry-open for that address the team's pull reaches it too.
func TestTeamsRegistryGuard(t *testing.T) {
	requirements(t, "runsc")
	reg := startRegistry(t)
	ref := reg.addr + "/private/image:1"
	spec := map[string]any{"fromImage": ref}
	reason := func(d *daemon, key, name string) string {
		t.Helper()
		tid, bid, code, _ := d.buildAs(t, key, name, spec)
		if code != 202 {
			t.Fatalf("start build %s: %d", name, code)
		}
		st := d.waitBuildAs(t, key, tid, bid)
		if st.Status != "error" || st.Reason == nil {
			t.Fatalf("build %s of a missing image: %+v", name, st)
		}
		return st.Reason.Message
	}
	d := startDaemon(t, "runsc", "")
	tm := d.newTeam("reg-guard", nil)
	if msg := reason(d, tm.Key, "reg-team"); !strings.Contains(msg, "registry address not allowed") || !strings.Contains(msg, "--registry-open") {
		t.Errorf("team's pull from a loopback registry: %q, want refused", msg)
	}
	if msg := reason(d, apiKey, "reg-operator"); !strings.Contains(msg, "no such repository") {
		t.Errorf("operator's pull: %q, want the registry's answer (not found)", msg)
	}
	open := startDaemon(t, "runsc", "", "--registry-open", "127.0.0.1/32")
	tm = open.newTeam("reg-open", nil)
	if msg := reason(open, tm.Key, "reg-team"); !strings.Contains(msg, "no such repository") {
		t.Errorf("team's pull with --registry-open: %q, want the registry's answer (not found)", msg)
	}
}
