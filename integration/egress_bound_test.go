package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEgressConnsBoundedPerTeam: a daemon whose descriptor limit is 4,096
// lets one team hold at most 42 connections through the SNI/Host guard at
// once (85 in all: an eighth of the limit at six descriptors each, half of
// that a team), though the guard's own bound is 256 per sandbox: two
// sandboxes of one team holding 100 HTTP connections each open see 158 or
// more refused as "too many connections", and the daemon's open
// descriptors grow by at most six a connection. Before, the guard bounded
// per sandbox only: all 200 were held (770 descriptors on crun: each
// spliced connection holds two sockets and two pipes), and about 15
// sandboxes of one team could take this host's 20,000.
func TestEgressConnsBoundedPerTeam(t *testing.T) {
	for _, rt := range egressRuntimes {
		t.Run(rt, func(t *testing.T) { egressConnsBounded(t, rt) })
	}
}

func egressConnsBounded(t *testing.T, rt string) {
	lockHost(t)
	newInternet(t)
	d := startLimitedEgressDaemon(t, rt, 4096) // sandboxes get 4,096 themselves: no lower
	pol := map[string]any{"network": map[string]any{"allowOut": []string{"allowed.test"}}}
	sbs := []*sandbox{d.create(pol), d.create(pol)}
	fds0 := openFDs(t, d.cmd.Process.Pid)
	// 100 connections a sandbox to allowed.test:80 held open for 25 s
	// (HTTP keep-alive): each admitted one holds two of the daemon's
	// descriptors.
	done := make(chan struct{}, len(sbs))
	for _, sb := range sbs {
		go func() {
			defer func() { done <- struct{}{} }()
			_, _, _ = sb.runErr("", `getent hosts allowed.test >/dev/null
for i in $(seq 100); do (printf 'GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n'; sleep 25) | curl -s -m 26 telnet://allowed.test:80 >/dev/null 2>&1 & done
sleep 15`, 60*time.Second)
		}()
	}
	for range sbs {
		<-done
	}
	fds := openFDs(t, d.cmd.Process.Pid)
	refused := strings.Count(d.log.String(), `reason="too many connections"`)
	// on a loaded host the last curls may connect after the scripts'
	// 15 s: the held ones stay held for 25 s, so wait a little for them
	for deadline := time.Now().Add(8 * time.Second); refused < 158 && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		refused = strings.Count(d.log.String(), `reason="too many connections"`)
	}
	t.Logf("daemon descriptors: %d before, %d while held; refused as too many: %d of 200", fds0, fds, refused)
	if refused < 158 {
		t.Errorf("%d of 200 connections refused as too many, want at least 158 (42 a team of 4,096 descriptors)", refused)
	}
	if fds-fds0 > 6*42+16 {
		t.Errorf("the daemon held %d more descriptors while the connections were open", fds-fds0)
	}
}

// startLimitedEgressDaemon is startEgressDaemon with the daemon's
// descriptor limit (soft and hard) set to n: its bounds derive from it.
func startLimitedEgressDaemon(t *testing.T, rt string, n int) *daemon {
	lockHost(t)
	t.Cleanup(func() { _ = exec.Command("nft", "delete", "table", "inet", "eg").Run() })
	sbxBin, templates := requirements(t, rt)
	wrap := filepath.Join(t.TempDir(), "sbx")
	script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 1\nexec %s \"$@\"\n", n, sbxBin)
	if err := os.WriteFile(wrap, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := launchDaemon(t, wrap, templates, rt, newDataDir(t), nil, []string{"--net-prefix", "eg",
		"--subnet", "10.210.0.0/16", "--uplink", inetLink, "--dns-upstream", inetA + ":53"})
	if err := d.waitHealthy(); err != nil {
		t.Fatalf("%v:\n%s", err, d.log)
	}
	return d
}

// openFDs is the number of descriptors process pid holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + itoa(int64(pid)) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
