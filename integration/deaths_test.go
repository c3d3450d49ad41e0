package integration

import (
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noticeWithin bounds how long the daemon may take to reap a sandbox that
// died on its own (the init's pidfd wakes its watchdog; runsc's delete of a
// dead sandbox and the release of its network take most of it).
const noticeWithin = 3 * time.Second

// A death is one way a sandbox's agent or container ends behind the
// daemon's back, on the runtimes where it can happen.
type death struct {
	name     string
	runtimes []string
	body     map[string]any
	cause    func(t *testing.T, d *daemon, sb *sandbox, rt string)
}

var deaths = []death{
	// Root inside signals the agent (PID 1): the kernel drops SIGKILL from
	// inside the pid namespace, but SIGTERM (handled: a clean shutdown)
	// and SIGSEGV (Go's crash) end it, and with it the container.
	{"agent-sigterm-by-root", []string{"runsc", "crun"}, nil, func(t *testing.T, _ *daemon, sb *sandbox, _ string) {
		_, _, _ = sb.runErr("root", "kill -TERM 1; sleep 5", 10*time.Second)
	}},
	{"agent-crash-by-root", []string{"runsc", "crun"}, nil, func(t *testing.T, _ *daemon, sb *sandbox, _ string) {
		_, _, _ = sb.runErr("root", "kill -SEGV 1; sleep 5", 10*time.Second)
	}},
	// The sandbox's init (Sentry, crun's container init) SIGKILLed on the
	// host, as the host's OOM killer does.
	{"init-killed-on-host", []string{"runsc", "crun"}, nil, func(t *testing.T, d *daemon, sb *sandbox, rt string) {
		killInit(t, d, sb, rt)
	}},
	// runsc's gofer SIGKILLed on the host: the Sentry ends with it.
	{"gofer-killed-on-host", []string{"runsc"}, nil, func(t *testing.T, _ *daemon, sb *sandbox, _ string) {
		out, err := exec.Command("pgrep", "-f", "runsc-gofer.*"+sb.ID).Output()
		pids := strings.Fields(string(out))
		if err != nil || len(pids) != 1 {
			t.Fatalf("gofer of %s: %q %v", sb.ID, out, err)
		}
		if err := exec.Command("kill", "-9", pids[0]).Run(); err != nil {
			t.Fatal(err)
		}
	}},
	// crun's layer is a tmpfs charged to the sandbox's memory cgroup: a
	// file past memoryMB leaves the OOM killer nothing to free. The writer
	// is killed; the agent lives on until its next allocation (the next
	// command), which the OOM killer ends it for, and the container with
	// it (without --disk-layers; docs/ARCHITECTURE.md).
	{"disk-fill-past-memory", []string{"crun"}, map[string]any{"memoryMB": 128}, func(t *testing.T, _ *daemon, sb *sandbox, _ string) {
		_, _, _ = sb.runErr("user", "head -c 400M /dev/zero > /home/user/fill", 30*time.Second)
		for i := 0; i < 5 && sb.d.api("GET", "/sandboxes/"+sb.ID, nil, nil) == 200; i++ {
			_, _, _ = sb.runErr("user", "ls -la /home/user", 10*time.Second)
		}
	}},
}

// TestSandboxDeaths (runsc, crun): for every way a sandbox's agent or
// container can die on its own, the daemon notices within noticeWithin:
// the sandbox leaves the list and getInfo (404), its traffic gets 502 (the
// SDK's "not running"), the audit log has "killed, reason exited", the
// deaths counter moves, and the host is back to its baseline. A sandbox
// beside it lives on.
func TestSandboxDeaths(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "")
			base := d.inventory()
			bystander := d.create(map[string]any{"timeout": 300})
			n := 0
			for _, dt := range deaths {
				if !slices.Contains(dt.runtimes, rt) {
					continue
				}
				t.Run(dt.name, func(t *testing.T) {
					body := map[string]any{"timeout": 120}
					for k, v := range dt.body {
						body[k] = v
					}
					sb := d.create(body)
					dt.cause(t, d, sb, rt)
					start := time.Now()
					sb.waitGone(t, noticeWithin)
					t.Logf("reaped %v after the cause returned", time.Since(start).Round(time.Millisecond))
					sb.checkDead(t)
				})
				n++
			}
			if _, code := bystander.run("user", "true", 20*time.Second); code != 0 {
				t.Fatalf("the sandbox beside them: exit %d", code)
			}
			series := `sbx_sandbox_deaths_total{runtime="` + rt + `"}`
			got := 0.0
			for end := time.Now().Add(5 * time.Second); got != float64(n) && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				_, m := scrape(t, d.url+"/metrics", true) // counted once the reap is done
				got = m[series]
			}
			if got != float64(n) {
				t.Errorf("%s = %v, want %d", series, got, n)
			}
			d.deleteQuiet(bystander.ID)
			d.backToBaseline(t, base)
		})
	}
}

// TestSandboxDiesWhileDaemonDown (runsc, crun): a sandbox that dies while
// its daemon is down (SIGKILLed) is reaped by the next start, which leaves
// nothing of it on the host.
func TestSandboxDiesWhileDaemonDown(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			dir := newDataDir(t)
			d := startDaemon(t, rt, dir)
			base := d.inventory()
			sb := d.create(map[string]any{"timeout": 120})
			d.stop(syscall.SIGKILL)
			killInit(t, d, sb, rt)
			d2 := startDaemon(t, rt, dir)
			sb.d = d2
			sb.waitGone(t, noticeWithin)
			sb.checkDead(t)
			d2.backToBaseline(t, base)
		})
	}
}

// waitGone waits up to within for sb to leave getInfo (404).
func (s *sandbox) waitGone(t *testing.T, within time.Duration) {
	t.Helper()
	for end := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		if code := s.d.api("GET", "/sandboxes/"+s.ID, nil, nil); code == 404 {
			return
		} else if time.Now().After(end) {
			t.Fatalf("sandbox %s still answers %d %v after it died:\n%s", s.ID, code, within, problems(s.d.log.String(), 3000))
		}
	}
}

// checkDead checks what a client sees of a reaped sandbox: not listed,
// its agent traffic answered 502 (not running), its end audited.
func (s *sandbox) checkDead(t *testing.T) {
	t.Helper()
	var list []struct {
		ID string `json:"sandboxID"`
	}
	s.d.api("GET", "/v2/sandboxes", nil, &list)
	for _, l := range list {
		if l.ID == s.ID {
			t.Errorf("dead sandbox %s still listed", s.ID)
		}
	}
	req, _ := http.NewRequest("GET", s.d.url+"/health", nil)
	req.Header.Set("E2b-Sandbox-Id", s.ID)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 502 {
		t.Errorf("traffic to the dead sandbox: %v %v, want 502", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	if _, code, err := s.runErr("user", "true", 10*time.Second); err == nil && code == 0 {
		t.Errorf("a command ran in the dead sandbox")
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if s.endAudited() {
			return
		}
	}
	t.Errorf("no audit record of %s's end", s.ID)
}

// endAudited reports whether the audit log records sb's end: killed
// because its init exited, or reaped by a restart.
func (s *sandbox) endAudited() bool {
	audit, _ := os.ReadFile(s.d.dataDir + "/audit.log")
	for _, l := range strings.Split(string(audit), "\n") {
		if strings.Contains(l, s.ID) && (strings.Contains(l, `"reason":"exited"`) || strings.Contains(l, `"event":"reaped"`)) {
			return true
		}
	}
	return false
}

// TestPooledSandboxDies (runsc, crun): a pooled sandbox whose init dies
// leaves its pool and is replaced; the next create gets a live sandbox at
// once (before: it claimed the dead one and waited ~11 s for its agent
// before starting cold).
func TestPooledSandboxDies(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "", "--pool", "base=1")
			d.waitPool(t, 1)
			dead := d.onlyBundle(t, rt)
			killInit(t, d, &sandbox{d: d, ID: dead}, rt)
			start := time.Now()
			sb := d.create(map[string]any{"timeout": 60})
			took := time.Since(start)
			if sb.ID == dead || took > 5*time.Second {
				t.Fatalf("create after the pooled sandbox died: %s in %v (the dead one: %s)", sb.ID, took, dead)
			}
			if _, code := sb.run("user", "true", 20*time.Second); code != 0 {
				t.Fatalf("the created sandbox: exit %d", code)
			}
			// Reaped by the watchdog, or by the claim that found it dying.
			bundle := d.dataDir + "/run/runtime/bundles-" + rt + "/" + dead
			for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat(bundle); os.IsNotExist(err) {
					break
				} else if time.Now().After(end) {
					t.Fatalf("the dead pooled sandbox was not reaped:\n%s", problems(d.log.String(), 3000))
				}
			}
		})
	}
}

// waitPool waits up to 60 s for the daemon's pools to hold n ready
// sandboxes in all (GET /health), so the next creates are claims.
func (d *daemon) waitPool(t *testing.T, n int) {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		var h struct {
			Pools map[string]int `json:"pools"`
		}
		d.api("GET", "/health", nil, &h)
		sum := 0
		for _, v := range h.Pools {
			sum += v
		}
		if sum >= n {
			return
		}
	}
	t.Fatalf("the pools did not hold %d within 60 s\n%s", n, tail(d.log.String(), 2000))
}

// onlyBundle is the id of the one runtime bundle of the daemon (its pooled
// sandbox, before any create).
func (d *daemon) onlyBundle(t *testing.T, rt string) string {
	t.Helper()
	ents, err := os.ReadDir(d.dataDir + "/run/runtime/bundles-" + rt)
	if err != nil || len(ents) != 1 {
		t.Fatalf("bundles: %v %v", ents, err)
	}
	return ents[0].Name()
}
