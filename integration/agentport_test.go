package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// stealAgentPort tries, as root inside, to bind the agent's port (49983)
// and the code interpreter's (49999) on the sandbox's address, loopback and
// the wildcard, with every combination of SO_REUSEADDR and SO_REUSEPORT,
// and to listen there; it prints one line per bound socket ("BOUND ...").
const stealAgentPort = `python3 - <<'EOF'
import socket, subprocess
ips = subprocess.run(['hostname', '-I'], capture_output=True, text=True).stdout.split()
held = []
for port in (49983, 49999):
    for host in ips + ['127.0.0.1', '0.0.0.0']:
        for ra in (0, 1):
            for rp in (0, 1):
                s = socket.socket()
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, ra)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, rp)
                    s.bind((host, port))
                    s.listen(8)
                    held.append(s)
                    print('BOUND', host, port, 'reuseaddr', ra, 'reuseport', rp)
                except OSError as e:
                    print('refused', host, port, ra, rp, e.errno)
print('tried', ips)
EOF`

// TestAgentPortKept (runsc, crun): root inside cannot take the agent's port
// (or the code interpreter's) from it, on any address, so every connection
// the daemon makes to the sandbox's agent (health, /init at a resume or
// fork, event reads, proxied requests) reaches the agent. Before, on runsc
// gVisor let a socket with SO_REUSEADDR bind <sandbox IP>:49983 next to the
// agent's wildcard listener (Go sets SO_REUSEADDR on it) and that socket
// took the daemon's new connections (its event reads, with the sandbox's
// access token). After the attempts the agent still answers a command and
// the daemon's event reads, also after a pause and resume (runsc), and the code
// interpreter runs code.
func TestAgentPortKept(t *testing.T) {
	for _, rt := range []string{"runsc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			d := startDaemon(t, rt, "")
			sb := d.create(map[string]any{"templateID": "code-interpreter-v1"})
			for round := range 2 {
				out, code := sb.run("root", stealAgentPort, time.Minute)
				if code != 0 || !strings.Contains(out, "tried") {
					t.Fatalf("round %d: probe failed (exit %d):\n%s", round, code, out)
				}
				if strings.Contains(out, "BOUND") {
					t.Fatalf("round %d: root inside bound the agent's port next to the agent:\n%s", round, out)
				}
				if out, code := sb.run("user", "echo still-the-agent", 30*time.Second); code != 0 || out != "still-the-agent\n" {
					t.Fatalf("round %d: after the attempts: %q (exit %d)", round, out, code)
				}
				if !sb.agentHealthy() {
					t.Fatalf("round %d: the agent does not answer /health after the attempts", round)
				}
				if got := sb.runCode(t, "print(6*7)"); !strings.Contains(got, "42") {
					t.Fatalf("round %d: the code interpreter after the attempts: %q", round, got)
				}
				if rt != "runsc" {
					break // crun has no memory pause (501)
				}
				sb.pauseResume(t) // the listeners come back with the memory image
			}
		})
	}
}

// TestStoppedAgent (runsc): root inside stopping the agent (gVisor delivers
// SIGSTOP to init; Known gaps) costs only its own sandbox: a resume answers
// 503 and leaves it paused, a kill ends it within seconds, a neighbour
// keeps working and the host is back to its baseline after.
func TestStoppedAgent(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	base := d.inventory()
	nb := d.create(nil)
	stopped := func() *sandbox {
		sb := d.create(nil)
		if out, code := sb.run("root", "setsid sh -c 'sleep 1; kill -STOP 1' >/dev/null 2>&1 < /dev/null & echo ok", 30*time.Second); code != 0 {
			t.Fatalf("stop the agent: %q (exit %d)", out, code)
		}
		time.Sleep(2 * time.Second)
		req, _ := http.NewRequest("GET", d.url+"/health", nil)
		req.Header.Set("E2b-Sandbox-Id", sb.ID)
		if resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("the stopped agent answered /health (%d): it was not stopped", resp.StatusCode)
		}
		return sb
	}
	a := stopped()
	if code := d.api("POST", "/sandboxes/"+a.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause: %d", code)
	}
	if code := d.api("POST", "/v2/sandboxes/"+a.ID+"/connect", map[string]any{"timeout": 60}, nil); code != 503 || d.state(a.ID) != "paused" {
		t.Fatalf("resume of a stopped agent: %d, state %s; want 503, paused", code, d.state(a.ID))
	}
	b := stopped()
	for _, sb := range []*sandbox{a, b} {
		t0 := time.Now()
		if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 || time.Since(t0) > 5*time.Second {
			t.Fatalf("delete: %d after %v", code, time.Since(t0))
		}
	}
	if out, code := nb.run("user", "echo neighbour", 30*time.Second); code != 0 || out != "neighbour\n" {
		t.Fatalf("neighbour: %q (exit %d)", out, code)
	}
	d.api("DELETE", "/sandboxes/"+nb.ID, nil, nil)
	d.backToBaseline(t, base, a.ID, b.ID, nb.ID)
}
