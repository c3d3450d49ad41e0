package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

// TestClusterFrontConnsPerAddr: a node counts client connections per remote
// address (--max-conns-per-addr), and its cluster front speaks for every
// client from one address. A node with the cluster secret stops counting a
// connection under its address once a request on it is signed by the front,
// so one tenant holding requests through the front (here 12 API requests
// whose bodies never come, against a bound of 8; a body over the front's
// small-body bound, so that the front forwards before it has it) cannot make the node close
// the front's next connection: another tenant's request to its sandbox on
// that node is served meanwhile. Before, it got 502 (the node closed the
// front's connection at once), and so did the tenant's own requests past
// the bound: with the default bound, 2,500 requests held by one tenant
// (its proxy bound at a node is as many) cut every tenant off that node.
// The node listens on a non-loopback address (loopback is never counted).
func TestClusterFrontConnsPerAddr(t *testing.T) {
	_, fr := startSignedCluster(t, "--max-conns-per-addr", "8")
	a, b := fr.newTeam("conns-a", nil), fr.newTeam("conns-b", nil)
	sa, sb := fr.createAs(a.Key, nil), fr.createAs(b.Key, nil)

	frontAddr := strings.TrimPrefix(fr.url, "http://")
	for range 12 { // team A's requests through the front, held by the node waiting for their bodies
		c, err := net.Dial("tcp", frontAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /sandboxes/%s/timeout HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", sa.ID, frontAddr, a.Key)
	}
	time.Sleep(2 * time.Second) // forwarded to the node by now
	for i := range 3 {
		if code, _, body := fr.call("GET", "/sandboxes/"+sb.ID, map[string]string{"X-API-Key": b.Key}, nil); code != 200 {
			t.Fatalf("team B's request %d through the front while team A holds 12 requests: %d %s", i, code, body)
		}
	}
}

// TestClusterSignatureNotForwarded: the front's signature of a request is
// for the node alone. A node takes it off the request once verified, so a
// server in a sandbox, which receives the requests to its ports, never sees
// it. Before, it got the header, good for 30 s for the method and URI its
// tenant chose (here GET /sandboxes/<id>, sent to the sandbox's port
// through the front): sent straight to the node with it, the tenant's API
// request was served, bypassing the front the secret is there to enforce.
func TestClusterSignatureNotForwarded(t *testing.T) {
	n1, fr := startSignedCluster(t)
	tm := fr.newTeam("sig-a", nil)
	sb := fr.createAs(tm.Key, nil)
	const echo = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = str(self.headers).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
http.server.HTTPServer(("0.0.0.0", 8080), H).serve_forever()
`
	if out, code := sb.run("", "cat > /tmp/echo.py <<'EOF'\n"+echo+"EOF\nsetsid nohup python3 /tmp/echo.py >/dev/null 2>&1 &\nsleep 1", 20*time.Second); code != 0 {
		t.Fatalf("start the echo server: %d %s", code, out)
	}
	uri := "/sandboxes/" + sb.ID
	var headers string
	for i := 0; i < 20; i++ {
		code, _, body := fr.call("GET", uri, map[string]string{"E2b-Sandbox-Id": sb.ID, "E2b-Sandbox-Port": "8080"}, nil)
		if code == 200 {
			headers = string(body)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if headers == "" {
		t.Fatal("the sandbox's server did not answer through the front")
	}
	for _, line := range strings.Split(headers, "\n") {
		name, sig, _ := strings.Cut(line, ":")
		if !strings.EqualFold(strings.TrimSpace(name), "Sbx-Cluster-Auth") {
			continue
		}
		code, _, _ := n1.call("GET", uri, map[string]string{"X-API-Key": tm.Key, "Sbx-Cluster-Auth": strings.TrimSpace(sig)}, nil)
		t.Fatalf("the sandbox's server received the front's signature (%s); sent straight to the node with the team's key: %d", strings.TrimSpace(sig), code)
	}
}

// startSignedCluster starts node1 with the cluster secret on a non-loopback
// address (loopback is never counted per address) and a front with the
// secret.
func startSignedCluster(t *testing.T, nodeArgs ...string) (n1, fr *daemon) {
	t.Helper()
	sbxBin, templates := requirements(t, "crun")
	url := pgtest.URL(t)
	admin := openAdmin(t, url)
	secret := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(secret, []byte("an-integration-test-cluster-secret-of-40b"), 0o600); err != nil {
		t.Fatal(err)
	}
	host := nonLoopbackIPv4(t)
	port := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	prefix, args := clusterNodeArgs(url, 1, append([]string{"--cluster-secret-file", secret,
		"--listen", "0.0.0.0:" + port, "--advertise", "http://" + net.JoinHostPort(host, port)}, nodeArgs...))
	n1 = launchDaemon(t, sbxBin, templates, "crun", newDataDir(t), nil, args)
	n1.netPrefix, n1.url = prefix, "http://127.0.0.1:"+port
	if err := n1.waitHealthy(); err != nil {
		t.Fatalf("%v:\n%s", err, n1.log)
	}
	waitNodes(t, admin, map[string]string{"node1": "live"})
	time.Sleep(clusterTTL / 2) // a heartbeat: reports with runtimes
	return n1, startFront(t, url, "--cluster-secret-file", secret)
}

// nonLoopbackIPv4 is an IPv4 address of this host that is not loopback.
func nonLoopbackIPv4(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address")
	return ""
}

// TestClusterFrontConnsBounded: the API front (--role api), the cluster's
// way in, bounds client connections as a node's listener does: half its
// descriptor limit in all, a quarter of that per remote address, past
// which an address's next connection is closed at once. Here, under a
// limit of 1024 descriptors, one address opening 1100 idle connections
// leaves the front serving another client. Before, its listener was not
// bounded at all: the connections took its descriptors (EMFILE), and
// another client's request failed.
func TestClusterFrontConnsBounded(t *testing.T) {
	sbxBin, _ := requirements(t)
	url := pgtest.URL(t)
	host := nonLoopbackIPv4(t)
	port := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	d := &daemon{t: t, url: "http://127.0.0.1:" + port, log: &syncBuffer{}, exited: make(chan struct{})}
	d.args = []string{"serve", "--role", "api", "--cluster", url, "--listen", "0.0.0.0:" + port}
	d.cmd = exec.Command("prlimit", append([]string{"--nofile=1024:1024", "--", sbxBin}, d.args...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() { d.stop(syscall.SIGTERM) })
	if err := d.waitHealthy(); err != nil {
		t.Fatalf("%v:\n%s", err, d.log)
	}
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for range 1100 {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 2*time.Second)
		if err != nil {
			break
		}
		held = append(held, c)
	}
	time.Sleep(time.Second) // accepted (or closed) by now
	client := &http.Client{Timeout: 5 * time.Second}
	for i := range 3 {
		resp, err := client.Get(d.url + "/v2/sandboxes")
		if err != nil {
			t.Fatalf("another client's request %d while one address holds %d connections: %v\n%s", i, len(held), err, tail(d.log.String(), 2000))
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("another client's request %d: %d", i, resp.StatusCode)
		}
	}
	t.Logf("one address opened %d connections; another client served", len(held))
}

// TestClusterFrontUpstreamBounded: every request the front forwards holds
// a connection to its node besides the client's, so the front bounds the
// requests it forwards at once (a quarter of its descriptor limit; 429
// past it). Here, under a limit of 1024 descriptors, 600 requests held
// from loopback (a node waiting for their bodies) leave the front with
// descriptors to spare and serving another client. Before, its 512 client
// connections and their 512 upstream ones took it to EMFILE (1024
// descriptors open, `accept4: too many open files`).
func TestClusterFrontUpstreamBounded(t *testing.T) {
	sbxBin, _ := requirements(t, "crun")
	url := pgtest.URL(t)
	admin := openAdmin(t, url)
	startClusterNode(t, "crun", url, 1, "")
	waitNodes(t, admin, map[string]string{"node1": "live"})
	time.Sleep(clusterTTL / 2) // a heartbeat: reports with runtimes
	addr := freeAddr(t)
	fr := &daemon{t: t, url: "http://" + addr, log: &syncBuffer{}, exited: make(chan struct{})}
	fr.args = []string{"serve", "--role", "api", "--cluster", url, "--listen", addr}
	fr.cmd = exec.Command("prlimit", append([]string{"--nofile=1024:1024", "--", sbxBin}, fr.args...)...)
	fr.cmd.Stdout, fr.cmd.Stderr = fr.log, fr.log
	if err := fr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = fr.cmd.Wait(); close(fr.exited) }()
	t.Cleanup(func() { fr.stop(syscall.SIGTERM) })
	if err := fr.waitHealthy(); err != nil {
		t.Fatalf("%v:\n%s", err, fr.log)
	}
	tm := fr.newTeam("upstream-a", nil)
	sb := fr.createAs(tm.Key, nil)
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for range 600 {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			break
		}
		held = append(held, c)
		fmt.Fprintf(c, "POST /sandboxes/%s/timeout HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", sb.ID, tm.Key)
	}
	time.Sleep(2 * time.Second)
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", fr.cmd.Process.Pid))
	t.Logf("%d requests held through the front: it holds %d descriptors of 1024", len(held), len(fds))
	if len(fds) > 900 || strings.Contains(fr.log.String(), "too many open files") {
		t.Fatalf("the front holds %d descriptors of 1024:\n%s", len(fds), tail(fr.log.String(), 1500))
	}
}

// TestClusterFrontClientBuckets: behind a front, a node holds keyless
// requests to the bucket of the client the front signed, not the front's
// one address. Before, one client past its bucket (here 130 requests with
// a wrong key from 127.0.0.2) had the node answer 429 to every other
// keyless request through the front: a sign-in, a signed download URL.
func TestClusterFrontClientBuckets(t *testing.T) {
	n1, fr := startSignedCluster(t)
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	get := func(c *http.Client) int {
		req, _ := http.NewRequest("GET", fr.url+"/sandboxes", nil)
		req.Header.Set("X-API-Key", "e2b_not-a-key")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	flooder, limited := from("127.0.0.2"), 0
	for range 130 {
		if get(flooder) == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("130 requests with a wrong key from one client: none refused 429")
	}
	if code := get(from("127.0.0.3")); code != http.StatusUnauthorized {
		t.Fatalf("another client's request with a wrong key, after the first's flood: %d, want 401", code)
	}
	if !strings.Contains(n1.log.String(), "remote=127.0.0.3") {
		t.Errorf("the node's log does not name the client 127.0.0.3:\n%s", n1.log)
	}
}
