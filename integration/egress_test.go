package integration

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress/egresstest"
)

// egressRuntimes are the backends the egress policy is proven on.
var egressRuntimes = []string{"runsc", "crun"}

// startEgressDaemon runs sbx serve masquerading out of the fake internet's
// link, with the internet's DNS server as upstream. Its nftables table is
// removed after the daemon stops.
func startEgressDaemon(t *testing.T, rt, dataDir string) *daemon {
	lockHost(t)
	t.Cleanup(func() { _ = exec.Command("nft", "delete", "table", "inet", "eg").Run() })
	return startDaemon(t, rt, dataDir, "--net-prefix", "eg", "--subnet", "10.210.0.0/16",
		"--uplink", inetLink, "--dns-upstream", inetA+":53")
}

// lockHost serialises the egress tests across concurrent go test runs on
// the host: they use fixed names (netns eginet, table eg, 10.210/16).
// Held until the test ends; taking it again in the same test is a no-op.
func lockHost(t *testing.T) {
	if locked[t.Name()] {
		return
	}
	f, err := os.OpenFile("/run/sbx-egress-test.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	locked[t.Name()] = true
	t.Cleanup(func() { delete(locked, t.Name()); f.Close() })
}

var locked = map[string]bool{} // tests holding the lock (tests here are sequential)

// probe runs every check of checks (name → shell test) at once inside sb
// and returns which succeeded.
func probe(t *testing.T, sb *sandbox, checks map[string]string) map[string]bool {
	t.Helper()
	var cmd strings.Builder
	for name, c := range checks {
		fmt.Fprintf(&cmd, "( %s ) >/dev/null 2>&1 && echo 'ok %s' || echo 'fail %s' &\n", c, name, name)
	}
	cmd.WriteString("wait\n")
	out, _ := sb.run("", cmd.String(), 60*time.Second)
	t.Logf("probe:\n%s", out)
	got := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "ok "); ok {
			got[name] = true
		}
	}
	return got
}

func curl(url string) string { return "curl -fsS -m 3 " + url }

// expect checks probe results against want (name → reachable).
func expect(t *testing.T, what string, got map[string]bool, want map[string]bool) {
	t.Helper()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %s succeeded=%v, want %v", what, name, got[name], w)
		}
	}
}

func TestEgressPolicy(t *testing.T) {
	for _, rt := range egressRuntimes {
		t.Run(rt, func(t *testing.T) { egressPolicy(t, rt) })
	}
}

func egressPolicy(t *testing.T, rt string) {
	lockHost(t)
	in := newInternet(t)
	d := startEgressDaemon(t, rt, "")
	hostPort := hostListener(t)
	open := d.create(nil)
	other := d.create(map[string]any{"allow_internet_access": false})
	otherIP := strings.TrimSpace(mustRun(t, other, `python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(('`+inetA+`', 9)); print(s.getsockname()[0])"`))
	gw := `$(awk '/^nameserver/{print $2; exit}' /etc/resolv.conf)`
	checks := map[string]string{
		"internet":      curl("http://" + inetA + "/"),
		"internet-b":    curl("http://" + inetB + "/"),
		"dns":           "getent hosts allowed.test | grep -q " + inetA,
		"smtp":          curl("http://" + inetA + ":25/"),
		"metadata":      curl("http://169.254.169.254/"),
		"gateway":       curl(fmt.Sprintf("http://%s:%d/", gw, hostPort)),
		"uplink-addr":   curl(fmt.Sprintf("http://11.210.0.1:%d/", hostPort)),
		"other-sandbox": curl("http://" + otherIP + ":49983/health"),
		"private":       curl("http://192.168.1.1/"),
		"resolv.conf":   "grep -qx 'nameserver 10.210.[0-9]*.[0-9]*' /etc/resolv.conf",
	}
	expect(t, "default policy", probe(t, open, checks), map[string]bool{"internet": true, "internet-b": true, "dns": true, "resolv.conf": true,
		"smtp": false, "metadata": false, "gateway": false, "uplink-addr": false, "other-sandbox": false, "private": false})
	if !in.sawPeer("11.210.0.1") || in.sawPeer(strings.TrimSpace(otherIP)) {
		t.Errorf("the internet saw %v, want only the masquerade address", in.peers)
	}
	denyAll(t, in, other)
	updateAtOnce(t, d, other)
	domains(t, d, in)
	badRules(t, d)
	for _, sb := range []*sandbox{open, other} {
		if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
			t.Fatalf("delete = %d", code)
		}
		noResidue(t, d, sb.ID)
		noNftResidue(t, sb.ID)
	}
}

// denyAll: allow_internet_access false lets nothing out, DNS included: no
// query reaches the internet's DNS server, through the resolver or direct.
func denyAll(t *testing.T, in *internet, sb *sandbox) {
	t.Helper()
	got := probe(t, sb, map[string]string{
		"internet":   curl("http://" + inetA + "/"),
		"dns":        "getent hosts leak-resolver.test",
		"dns-direct": `python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); s.sendto(bytes.fromhex('abcd01000001000000000000')+b'\x0bleak-direct\x04test\x00\x00\x01\x00\x01', ('` + inetA + `', 53)); s.recv(512)"`,
	})
	expect(t, "deny-all", got, map[string]bool{"internet": false, "dns": false, "dns-direct": false})
	for _, q := range []string{"leak-resolver.test", "leak-direct.test"} {
		if in.asked(q) {
			t.Errorf("deny-all sandbox leaked DNS query %s to the internet", q)
		}
	}
}

// updateAtOnce: PUT /sandboxes/{id}/network applies to the next connection.
func updateAtOnce(t *testing.T, d *daemon, sb *sandbox) {
	t.Helper()
	put := func(body map[string]any) {
		t.Helper()
		if code := d.api("PUT", "/sandboxes/"+sb.ID+"/network", body, nil); code != 204 {
			t.Fatalf("PUT network %v = %d", body, code)
		}
	}
	checks := map[string]string{"a": curl("http://" + inetA + "/"), "b": curl("http://" + inetB + "/")}
	put(map[string]any{"allow_internet_access": true, "denyOut": []string{inetB}})
	expect(t, "after PUT denyOut b", probe(t, sb, checks), map[string]bool{"a": true, "b": false})
	var detail struct {
		AllowInternetAccess *bool `json:"allowInternetAccess"`
		Network             struct {
			DenyOut []string `json:"denyOut"`
		} `json:"network"`
	}
	d.api("GET", "/sandboxes/"+sb.ID, nil, &detail)
	if detail.AllowInternetAccess == nil || !*detail.AllowInternetAccess || len(detail.Network.DenyOut) != 1 {
		t.Errorf("GET after PUT: %+v", detail)
	}
	put(map[string]any{"allow_internet_access": false})
	expect(t, "after PUT deny-all", probe(t, sb, checks), map[string]bool{"a": false, "b": false})
}

// domains: allowOut with a name resolves only that name, upstream, and
// opens only its addresses, and only for that name (the SNI/Host guard):
// a spoofed Host, an IP literal or --resolve to another address fail.
func domains(t *testing.T, d *daemon, in *internet) {
	t.Helper()
	sb := d.create(map[string]any{"network": map[string]any{"allowOut": []string{"allowed.test"}}})
	got := probe(t, sb, map[string]string{
		"allowed":       "getent hosts allowed.test && " + curl("http://allowed.test/"),
		"other-name":    "getent hosts other.test",
		"evil-suffix":   "getent hosts evil-allowed.test",
		"unresolved-ip": curl("http://" + inetB + "/"),
		"ip-literal":    "getent hosts allowed.test >/dev/null; " + curl("http://"+inetA+"/"),
		"host-spoof":    "getent hosts allowed.test >/dev/null; " + curl("-H 'Host: other.test' http://"+inetA+"/"),
		"resolve-spoof": curl("--resolve allowed.test:80:" + inetB + " http://allowed.test/"),
	})
	expect(t, "allowOut domain", got, map[string]bool{"allowed": true, "other-name": false, "evil-suffix": false,
		"unresolved-ip": false, "ip-literal": false, "host-spoof": false, "resolve-spoof": false})
	if !in.asked("allowed.test") || in.asked("other.test") || in.asked("evil-allowed.test") {
		t.Errorf("upstream queries %v: want allowed.test only", in.queries)
	}
	audit, _ := os.ReadFile(filepath.Join(d.dataDir, "audit.log"))
	for _, want := range []string{"other.test.", "allowed.test.", `"reason":"`} {
		found := false
		for _, line := range strings.Split(string(audit), "\n") {
			found = found || (strings.Contains(line, sb.ID) && strings.Contains(line, want))
		}
		if !found {
			t.Errorf("audit log has no record of %s with sandbox %s", want, sb.ID)
		}
	}
	if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
		t.Fatalf("delete = %d", code)
	}
	noResidue(t, d, sb.ID)
	noNftResidue(t, sb.ID)
}

// badRules: malformed rules are 400 {code, message}, on create and PUT.
func badRules(t *testing.T, d *daemon) {
	t.Helper()
	var e struct{ Code int }
	if code := d.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base",
		"network": map[string]any{"allowOut": []string{"not a domain!"}}}, &e); code != 400 || e.Code != 400 {
		t.Errorf("create with a bad rule = %d %+v", code, e)
	}
	sb := d.create(nil)
	if code := d.api("PUT", "/sandboxes/"+sb.ID+"/network", map[string]any{"denyOut": []string{"example.com"}}, &e); code != 400 || e.Code != 400 {
		t.Errorf("PUT with a domain in denyOut = %d %+v", code, e)
	}
	if code := d.api("PUT", "/sandboxes/nosuchsandbox0000000/network", map[string]any{}, nil); code != 404 {
		t.Errorf("PUT for an unknown sandbox = %d", code)
	}
	d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil)
}

// TestEgressHoldsWhileDaemonDown: the policy is in the kernel: with the
// daemon killed, a deny-all sandbox still cannot get out, an open one
// still can; a restarted daemon re-adopts both with their policies.
func TestEgressHoldsWhileDaemonDown(t *testing.T) {
	for _, rt := range egressRuntimes {
		t.Run(rt, func(t *testing.T) {
			lockHost(t)
			newInternet(t)
			d := startEgressDaemon(t, rt, "")
			open, closed := d.create(nil), d.create(map[string]any{"allow_internet_access": false})
			bg := "nohup sh -c 'sleep 4; " + curl("http://"+inetA+"/") + " >/tmp/out 2>&1; echo $? >/tmp/rc' >/dev/null 2>&1 &"
			mustRun(t, open, bg)
			mustRun(t, closed, bg)
			d.stop(syscall.SIGKILL)
			time.Sleep(9 * time.Second)
			d2 := startEgressDaemon(t, rt, d.dataDir)
			open.d, closed.d = d2, d2
			t.Cleanup(func() { d2.deleteQuiet(open.ID); d2.deleteQuiet(closed.ID) }) // before d2 stops
			if rc := strings.TrimSpace(mustRun(t, open, "cat /tmp/rc")); rc != "0" {
				t.Errorf("open sandbox, daemon down: curl exit %q", rc)
			}
			if rc := strings.TrimSpace(mustRun(t, closed, "cat /tmp/rc")); rc == "0" || rc == "" {
				t.Errorf("deny-all sandbox, daemon down: curl exit %q", rc)
			}
			expect(t, "re-adopted deny-all", probe(t, closed, map[string]string{"dns": "getent hosts x.test"}), map[string]bool{"dns": false})
			expect(t, "re-adopted open", probe(t, open, map[string]string{"dns": "getent hosts allowed.test"}), map[string]bool{"dns": true})
			for _, sb := range []*sandbox{open, closed} {
				d2.api("DELETE", "/sandboxes/"+sb.ID, nil, nil)
				noNftResidue(t, sb.ID)
			}
		})
	}
}

func mustRun(t *testing.T, sb *sandbox, cmd string) string {
	t.Helper()
	out, code := sb.run("", cmd, 30*time.Second)
	if code != 0 {
		t.Fatalf("%q: exit %d: %s", cmd, code, out)
	}
	return out
}

// hostListener serves HTTP on the host's wildcard address: what a
// sandbox must not reach through any host address.
func hostListener(t *testing.T) int {
	addr := egresstest.Listen(t, "tcp4", "0.0.0.0:0", func(_ context.Context, c net.Conn) {
		c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nhost"))
		c.Close()
	})
	return int(netip.MustParseAddrPort(addr).Port())
}

// noNftResidue checks that the daemon's table holds nothing of sandbox id.
func noNftResidue(t *testing.T, id string) {
	t.Helper()
	sum := sha256.Sum256([]byte(id))
	link := "eg" + base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding).EncodeToString(sum[:])[:12]
	out, err := exec.Command("nft", "list", "table", "inet", "eg").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list: %v: %s", err, out)
	}
	if strings.Contains(string(out), link) {
		t.Errorf("nftables objects of %s (%s) left:\n%s", id, link, out)
	}
}

// TestEgressAcrossPause (runsc): a paused sandbox's policy is updated in its
// record; resume applies it, on the new link, before the restored
// processes run, and the resolver follows the new gateway.
func TestEgressAcrossPause(t *testing.T) {
	lockHost(t)
	newInternet(t)
	d := startEgressDaemon(t, "runsc", "")
	sb := d.create(map[string]any{"network": map[string]any{"allowOut": []string{"allowed.test"}}})
	checks := map[string]string{
		"allowed": "getent hosts allowed.test && " + curl("http://allowed.test/"),
		"ip-b":    curl("http://" + inetB + "/"),
		"other":   "getent hosts other.test",
	}
	expect(t, "before pause", probe(t, sb, checks), map[string]bool{"allowed": true, "ip-b": false, "other": false})
	if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause: %d\n%s", code, tail(d.log.String(), 2000))
	}
	if code := d.api("PUT", "/sandboxes/"+sb.ID+"/network", map[string]any{"allowOut": []string{"other.test"}}, nil); code != 204 {
		t.Fatalf("PUT network while paused: %d", code)
	}
	if code := d.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 60}, nil); code != 201 {
		t.Fatalf("resume: %d\n%s", code, tail(d.log.String(), 2000))
	}
	checks["other"] = "getent hosts other.test && " + curl("http://other.test/")
	expect(t, "after resume", probe(t, sb, checks), map[string]bool{"allowed": false, "ip-b": false, "other": true}) // an IP literal is no name
	if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
		t.Fatalf("delete = %d", code)
	}
	noResidue(t, d, sb.ID)
	noNftResidue(t, sb.ID)
}
