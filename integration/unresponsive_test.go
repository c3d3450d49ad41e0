package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// unresponsiveWithin bounds how long a request to a stopped agent may take
// to fail: proxy.DefaultStall's 30 s, and slack for a loaded host.
const unresponsiveWithin = 45 * time.Second

// stopAgent stops sb's agent without ending it: on runsc root inside does
// (gVisor delivers SIGSTOP to init), on crun, where the kernel drops it,
// the host stops the container's init, as a wedged agent would be.
func stopAgent(t *testing.T, d *daemon, sb *sandbox, rt string) {
	t.Helper()
	if rt == "runsc" {
		if out, code := sb.run("root", "setsid sh -c 'sleep 1; kill -STOP 1' >/dev/null 2>&1 < /dev/null & echo ok", 30*time.Second); code != 0 {
			t.Fatalf("stop the agent: %q (exit %d)", out, code)
		}
		time.Sleep(2 * time.Second)
	} else {
		pid := initPid(t, d, sb, rt)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitStopped(t, pid)
	}
	req, _ := http.NewRequest("GET", d.url+"/health", nil)
	req.Header.Set("E2b-Sandbox-Id", sb.ID)
	if resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the stopped agent answered /health (%d): it was not stopped", resp.StatusCode)
	}
}

// waitStopped waits until every thread of pid is stopped (a group stop
// reaches each thread as it next runs).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		stopped := len(stats) > 0
		for _, f := range stats {
			b, _ := os.ReadFile(f)
			_, after, _ := strings.Cut(string(b), ") ")
			stopped = stopped && strings.HasPrefix(after, "T")
		}
		if stopped {
			return
		}
	}
	t.Fatalf("pid %d not stopped after 5s", pid)
}

// initPid is the host pid of sb's init (on crun: the agent).
func initPid(t *testing.T, d *daemon, sb *sandbox, rt string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dataDir, "run", "runtime", "bundles-"+rt, sb.ID, "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("init pid of %s: %q %v", sb.ID, b, err)
	}
	return pid
}

// rawCall sends method path (body) to sb's agent port through the daemon
// as a client without a timeout would (the test's own bound is 3 min), and
// returns the status, the body and how long it took.
func (s *sandbox) rawCall(method, path, ctype string, body []byte) (int, string, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, s.d.url+path, bytes.NewReader(body))
	req.Header.Set("E2b-Sandbox-Id", s.ID)
	req.Header.Set("E2b-Sandbox-Port", "49983")
	req.Header.Set("X-Access-Token", s.Token)
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Connect-Protocol-Version", "1")
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error(), time.Since(t0)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b), time.Since(t0)
}

// TestUnresponsiveAgent (runsc, crun): a sandbox whose agent lives but does
// not answer (stopped) fails its requests within unresponsiveWithin with
// 502 "the sandbox's agent is not responding" (before: a process start, a
// file read and a write waited as long as their client, forever for one
// without a timeout), logged and counted in
// sbx_proxy_agent_unresponsive_total; getInfo, list and setTimeout answer
// at once, the sandbox is not killed for it, a timeout's expiry and a
// delete end it leaving nothing, a neighbour keeps working, and on crun,
// the agent continued, the sandbox answers again.
func TestUnresponsiveAgent(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "")
			defer d.stop(syscall.SIGTERM)
			base := d.inventory()
			nb := d.create(nil)
			a, b := d.create(map[string]any{"timeout": 300}), d.create(map[string]any{"timeout": 300})
			stopAgent(t, d, a, rt)
			stopAgent(t, d, b, rt)
			start := []byte(`{"process":{"cmd":"/bin/echo","args":["hi"]}}`)
			env := append([]byte{0, 0, 0, 0, byte(len(start))}, start...)
			calls := []struct {
				method, path, ctype string
				body                []byte
			}{
				{"POST", "/process.Process/Start", "application/connect+json", env},
				{"GET", "/files?path=/etc/hostname&username=user", "", nil},
				{"POST", "/files?path=/tmp/x&username=user", "application/octet-stream", []byte("x")},
				{"POST", "/filesystem.Filesystem/Stat", "application/json", []byte(`{"path":"/tmp"}`)},
			}
			var wg sync.WaitGroup
			for _, c := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					code, body, took := a.rawCall(c.method, c.path, c.ctype, c.body)
					t.Logf("%s %s: %d after %v: %s", c.method, c.path, code, took.Round(time.Millisecond), body)
					if code != 502 || !strings.Contains(body, "agent is not responding") || took > unresponsiveWithin {
						t.Errorf("%s %s on a stopped agent: %d %q after %v; want 502 not responding within %v", c.method, c.path, code, body, took, unresponsiveWithin)
					}
				}()
			}
			t0 := time.Now()
			var info map[string]any
			if code := d.api("GET", "/sandboxes/"+a.ID, nil, &info); code != 200 || info["state"] != "running" {
				t.Errorf("getInfo: %d %v", code, info["state"])
			}
			var list []map[string]any
			if code := d.api("GET", "/v2/sandboxes", nil, &list); code != 200 || len(list) != 3 {
				t.Errorf("list: %d, %d sandboxes", code, len(list))
			}
			if code := d.api("POST", "/sandboxes/"+b.ID+"/timeout", map[string]any{"timeout": 2}, nil); code != 204 {
				t.Errorf("setTimeout: %d", code)
			}
			if took := time.Since(t0); took > 5*time.Second {
				t.Errorf("getInfo, list and setTimeout took %v", took)
			}
			b.waitGone(t, 15*time.Second) // the timeout's expiry ends it
			if out, code := nb.run("user", "echo neighbour", 30*time.Second); code != 0 || out != "neighbour\n" {
				t.Errorf("neighbour: %q (exit %d)", out, code)
			}
			wg.Wait()
			if d.state(a.ID) != "running" {
				t.Errorf("the stopped sandbox is %q after its requests failed; want running (never killed for it)", d.state(a.ID))
			}
			_, m := scrape(t, d.url+"/metrics", true)
			if got := m["sbx_proxy_agent_unresponsive_total"]; got != float64(len(calls)) {
				t.Errorf("sbx_proxy_agent_unresponsive_total = %v, want %d", got, len(calls))
			}
			if !strings.Contains(d.log.String(), "sandbox agent does not answer /health") {
				t.Error("no log line names the unresponsive agent")
			}
			if rt == "crun" { // the wedge ends: the sandbox was never marked, it just works
				if err := syscall.Kill(initPid(t, d, a, rt), syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
				if out, code := a.run("user", "echo back", 30*time.Second); code != 0 || out != "back\n" {
					t.Errorf("after SIGCONT: %q (exit %d)", out, code)
				}
			}
			t1 := time.Now()
			if code := d.api("DELETE", "/sandboxes/"+a.ID, nil, nil); code != 204 || time.Since(t1) > 5*time.Second {
				t.Errorf("delete: %d after %v", code, time.Since(t1))
			}
			d.api("DELETE", "/sandboxes/"+nb.ID, nil, nil)
			d.backToBaseline(t, base, a.ID, b.ID, nb.ID)
		})
	}
}
