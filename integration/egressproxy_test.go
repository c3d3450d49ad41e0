package integration

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress/socks/socks5test"
)

// The egress proxy tests' SOCKS5 server listens on the host's loopback
// (where only the daemon reaches it) and dials the internet from its own
// address proxySrc, so the internet's servers tell a tunnelled connection
// (peer proxySrc) from a direct one (peer 11.210.0.1, the masquerade).
const (
	proxyUser = "puser"
	proxyPass = "ppass-s3cret-9f2c"
	proxySrc  = "11.210.0.9"
)

// startProxy runs the test SOCKS5 server; it is closed when the test ends.
func startProxy(t *testing.T) (*socks5test.Server, string) {
	t.Helper()
	if out, err := exec.Command("ip", "addr", "add", proxySrc+"/24", "dev", inetLink).CombinedOutput(); err != nil {
		t.Fatalf("ip addr add: %v: %s", err, out)
	}
	// The proxy resolves names it is asked for with the internet's DNS (it
	// is on the host's loopback, opened: the daemon asks it for addresses).
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, inetA+":53")
	}}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(proxySrc)}, Timeout: 5 * time.Second, Resolver: res}
	s := &socks5test.Server{Username: proxyUser, Password: proxyPass, Dial: d.DialContext}
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, addr
}

// serveStreams serves, inside the internet at inetA:8080, /big (32 MiB)
// /slow (20 lines 100 ms apart, flushed each) and /endless (600 of them),
// recording peers, and a
// UDP echo on inetA:9053 that records each datagram as "udp:PAYLOAD" among
// the queries.
func (in *internet) serveStreams(t *testing.T) {
	var ln net.Listener
	listen(t, func() (err error) { ln, err = net.Listen("tcp4", inetA+":8080"); return err })
	chunk := []byte(strings.Repeat("x", 1<<20))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		in.mu.Lock()
		in.peers[host] = true
		in.mu.Unlock()
		if r.URL.Path == "/big" {
			for i := 0; i < 32; i++ {
				w.Write(chunk)
			}
			return
		}
		n := 20
		if r.URL.Path == "/endless" {
			n = 600
		}
		for i := 0; i < n && r.Context().Err() == nil; i++ {
			fmt.Fprintf(w, "tick %d\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	var pc net.PacketConn
	listen(t, func() (err error) { pc, err = net.ListenPacket("udp4", inetA+":9053"); return err })
	t.Cleanup(func() { pc.Close() })
	go func() {
		b := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(b)
			if err != nil {
				return
			}
			in.mu.Lock()
			in.queries = append(in.queries, "udp:"+string(b[:n]))
			in.mu.Unlock()
			_, _ = pc.WriteTo(b[:n], from)
		}
	}()
}

// resetPeers forgets the peers the internet's HTTP servers saw.
func (in *internet) resetPeers() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.peers = map[string]bool{}
}

func (in *internet) sawAny() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.peers) > 0
}

func asked(s *socks5test.Server, dst string) bool {
	for _, r := range s.Requests() {
		if r == dst {
			return true
		}
	}
	return false
}

func proxyCfg(addr, pass string) map[string]any {
	return map[string]any{"address": addr, "username": proxyUser, "password": pass}
}

// udpLeak sends a datagram to the internet's UDP echo (serveStreams) and
// waits for the echo.
const udpLeak = `python3 -c "import socket;s=socket.socket(2,2);s.settimeout(2);s.sendto(b'udpleak',('` + inetA + `',9053));s.recv(512)"`

// TestEgressProxy: a sandbox with network.egressProxy reaches the internet
// only through the SOCKS5 proxy (the internet sees the proxy's address,
// the proxy the destinations the daemon checked, never a name it would
// resolve again, DNS rebinding); streams
// stay streams; UDP but DNS is dropped; allowOut/denyOut still decide
// first; a wrong password or a dead proxy fail closed with the reason
// logged and audited; updateNetwork switches the proxy on and off; the
// password is never shown and the database holding it is 0600; nothing is
// left after kill. On runsc it also holds across pause and resume.
func TestEgressProxy(t *testing.T) {
	for _, rt := range egressRuntimes {
		t.Run(rt, func(t *testing.T) { egressProxy(t, rt) })
	}
}

func egressProxy(t *testing.T, rt string) {
	lockHost(t)
	in := newInternet(t)
	in.serveStreams(t)
	proxy, paddr := startProxy(t)
	caFile := serveUpstream(t, in) // api.test over HTTPS, for network.rules through the proxy
	t.Cleanup(func() { _ = exec.Command("nft", "delete", "table", "inet", "eg").Run() })
	args := []string{"--net-prefix", "eg", "--subnet", "10.210.0.0/16", "--egress-upstream-ca", caFile,
		"--uplink", inetLink, "--dns-upstream", inetA + ":53", "--egress-proxy-open", "127.0.0.1/32"}
	d := startDaemon(t, rt, "", args...)
	_, pport, _ := net.SplitHostPort(paddr)
	open := d.create(map[string]any{"network": map[string]any{"egressProxy": proxyCfg(paddr, proxyPass)}})
	tunnelled(t, in, proxy, open, pport)
	streams(t, open)
	domainsViaProxy(t, d, proxy, paddr)
	rebinding(t, d, in, proxy, paddr)
	rulesViaProxy(t, d, proxy, paddr)
	failsClosed(t, d, in, proxy, paddr)
	updates(t, d, in, proxy, open, paddr)
	if rt == "runsc" {
		acrossPause(t, d, proxy, paddr)
	}
	d = restarted(t, d, open, proxy, func(dir string) *daemon { return startDaemon(t, rt, dir, args...) })
	notShown(t, d, open.ID)
	mustRun(t, open, "nohup curl -sN http://"+inetA+":8080/endless >/dev/null 2>&1 &")
	waitFor(t, "a long-lived tunnel", func() bool { return proxy.Open() == 1 })
	if code := d.api("DELETE", "/sandboxes/"+open.ID, nil, nil); code != 204 {
		t.Fatalf("delete = %d", code)
	}
	waitFor(t, "the killed sandbox's tunnel closed at the proxy", func() bool { return proxy.Open() == 0 })
	noResidue(t, d, open.ID)
	noNftResidue(t, open.ID)
}

// tunnelled: the open-policy proxied sandbox's TCP goes through the proxy
// (the proxy asked for the IP the rules judged), nothing goes out
// directly, DNS still works through the filter, the proxy cannot be
// reached from inside, nor through it the host's own services at an
// address outside the always-blocked ranges (the uplink's 11.210.0.1: the
// proxy, on the host, would connect to it), and UDP does not leave.
func tunnelled(t *testing.T, in *internet, proxy *socks5test.Server, sb *sandbox, pport string) {
	gw := `$(awk '/^nameserver/{print $2; exit}' /etc/resolv.conf)`
	hostLn, err := net.Listen("tcp4", "11.210.0.1:0") // a host service on the uplink's address
	if err != nil {
		t.Fatal(err)
	}
	hostSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("host-service")) })}
	go hostSrv.Serve(hostLn)
	t.Cleanup(func() { hostSrv.Close() })
	n := len(proxy.Requests())
	in.resetPeers()
	checks := map[string]string{
		"host-uplink":  curl("http://" + hostLn.Addr().String() + "/"),
		"ip":           curl("http://" + inetA + "/"),
		"name":         "getent hosts allowed.test && " + curl("http://allowed.test/"),
		"proxy-gw":     curl("http://" + gw + ":" + pport + "/"),
		"proxy-lo":     curl("http://127.0.0.1:" + pport + "/"),
		"metadata":     curl("http://169.254.169.254/"),
		"udp":          udpLeak,
		"smtp-private": curl("http://192.168.1.1:25/"),
		"smtp":         curl("http://" + inetA + ":25/"),
	}
	expect(t, "proxied", probe(t, sb, checks), map[string]bool{"ip": true, "name": true, "host-uplink": false,
		"proxy-gw": false, "proxy-lo": false, "metadata": false, "udp": false, "smtp-private": false, "smtp": false})
	for _, r := range proxy.Requests()[n:] {
		if strings.HasPrefix(r, "11.210.0.1:") {
			t.Errorf("the proxy was asked for the host's own address %s", r)
		}
	}
	if !in.sawPeer(proxySrc) || in.sawPeer("11.210.0.1") {
		t.Errorf("the internet saw %v, want only the proxy (%s)", in.peers, proxySrc)
	}
	if !asked(proxy, inetA+":80") || asked(proxy, inetA+":25") {
		t.Errorf("proxy asked for %v, want %s:80 and never port 25", proxy.Requests(), inetA)
	}
	if in.asked("udp:udpleak") {
		t.Error("a UDP datagram left the proxied sandbox")
	}
}

// streams: a 32 MiB download and a trickling response come through whole.
func streams(t *testing.T, sb *sandbox) {
	out := mustRun(t, sb, "curl -fsS -m 60 http://"+inetA+":8080/big | wc -c")
	if strings.TrimSpace(out) != strconv.Itoa(32<<20) {
		t.Errorf("big download: %q bytes, want %d", out, 32<<20)
	}
	t0 := time.Now()
	out = mustRun(t, sb, "curl -fsSN -m 30 http://"+inetA+":8080/slow")
	if !strings.Contains(out, "tick 0\n") || !strings.Contains(out, "tick 19\n") || time.Since(t0) < 2*time.Second {
		t.Errorf("slow stream: %q in %v", out, time.Since(t0))
	}
}

// domainsViaProxy: under a domain allow-list the proxy (here on the host's
// loopback, opened with --egress-proxy-open) is asked for the address the
// daemon checked, not the name (see rebinding); other names, spoofed
// names and other addresses are refused before the proxy hears of them.
func domainsViaProxy(t *testing.T, d *daemon, proxy *socks5test.Server, paddr string) {
	sb := d.create(map[string]any{"network": map[string]any{"allowOut": []string{"allowed.test"}, "egressProxy": proxyCfg(paddr, proxyPass)}})
	checks := map[string]string{
		"allowed": "getent hosts allowed.test && " + curl("http://allowed.test/"),
		"ip-b":    curl("http://" + inetB + "/"),
		"other":   curl("http://other.test/"),
		"spoofed": "getent hosts allowed.test && curl -fsS -m 3 --resolve other.test:80:" + inetA + " http://other.test/",
	}
	expect(t, "allow-list via proxy", probe(t, sb, checks), map[string]bool{"allowed": true, "ip-b": false, "other": false, "spoofed": false})
	if !asked(proxy, inetA+":80") || asked(proxy, "allowed.test:80") {
		t.Errorf("proxy asked for %v, want the checked address %s:80, never the name", proxy.Requests(), inetA)
	}
	for _, r := range proxy.Requests() {
		if strings.HasPrefix(r, inetB) || strings.HasPrefix(r, "other.test") {
			t.Errorf("proxy was asked for %s, which the policy denies", r)
		}
	}
	d.deleteQuiet(sb.ID)
	noNftResidue(t, sb.ID)
}

// rebinding: an allowed name whose DNS answers the daemon's filter with a
// public address and, later, the proxy with 127.0.0.1 (DNS rebinding)
// does not take the sandbox to the proxy host's loopback services: the
// proxy, at an address the operator opened, is asked for the address the
// daemon checked. Before, it was asked for the name and a sandbox read a
// listener on the host's 127.0.0.1.
func rebinding(t *testing.T, d *daemon, in *internet, proxy *socks5test.Server, paddr string) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0") // the host's loopback, not the internet's
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("host-loopback-secret")) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	sb := d.create(map[string]any{"network": map[string]any{"allowOut": []string{"rebind.test"}, "egressProxy": proxyCfg(paddr, proxyPass)}})
	mustRun(t, sb, "getent hosts rebind.test") // the filter answers inetA
	in.mu.Lock()
	in.names["rebind.test"] = "127.0.0.1" // what the proxy would now resolve
	in.mu.Unlock()
	n := len(proxy.Requests())
	out, _ := sb.run("", "curl -sS -m 5 --resolve rebind.test:"+port+":"+inetA+" http://rebind.test:"+port+"/", 20*time.Second)
	if strings.Contains(out, "host-loopback-secret") {
		t.Errorf("a rebinding name reached the proxy host's loopback: %q", out)
	}
	if r := proxy.Requests(); len(r) != n+1 || r[n] != inetA+":"+port {
		t.Errorf("proxy asked for %v, want the checked address %s:%s (curl: %q)", r[n:], inetA, port, out)
	}
	d.deleteQuiet(sb.ID)
}

// rulesViaProxy: network.rules apply before the proxy: the header (a
// Secret resolved by the daemon) reaches api.test, over HTTPS verified by
// the daemon for the name, through the proxy, which is asked for the
// address the daemon checked (the proxy is at an opened address).
func rulesViaProxy(t *testing.T, d *daemon, proxy *socks5test.Server, paddr string) {
	if code := d.api("POST", "/secrets", map[string]any{"name": "proxy-key", "value": secretValue}, nil); code != 201 {
		t.Fatalf("create secret: %d", code)
	}
	rules := map[string]any{"api.test": []any{map[string]any{"transform": map[string]any{"headers": map[string]string{
		"Authorization": "Bearer ${e2b.secrets.proxy-key}"}}}}}
	sb := d.create(map[string]any{"network": map[string]any{"allowOut": []string{"api.test"}, "rules": rules,
		"egressProxy": proxyCfg(paddr, proxyPass)}})
	n := len(proxy.Requests())
	out := mustRun(t, sb, "curl -sS -m 10 https://api.test/echo")
	if !strings.Contains(out, `"auth":"Bearer `+secretValue+`"`) {
		t.Errorf("through the proxy with rules: %s", out)
	}
	if r := proxy.Requests(); len(r) != n+1 || r[n] != inetC+":443" {
		t.Errorf("proxy asked for %v, want %s:443", r[n:], inetC)
	}
	if strings.Contains(d.log.String(), secretValue) {
		t.Error("the daemon's log holds the secret")
	}
	d.deleteQuiet(sb.ID)
}

// failsClosed: a wrong password and a dead proxy reset the sandbox's
// connections, nothing goes out directly, and the log says why.
func failsClosed(t *testing.T, d *daemon, in *internet, proxy *socks5test.Server, paddr string) {
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	failures := proxy.AuthFailures()
	for _, c := range []struct{ name, addr, pass, reason string }{
		{"wrong password", paddr, "wrong-pw-77", "egress proxy authentication failed"},
		{"dead proxy", deadAddr, proxyPass, "egress proxy unreachable"},
	} {
		in.resetPeers()
		sb := d.create(map[string]any{"network": map[string]any{"egressProxy": proxyCfg(c.addr, c.pass)}})
		out, code := sb.run("", "curl -sS -m 5 http://"+inetA+"/", 20*time.Second)
		// The RST comes at once: before curl sees its connect done (exit 7),
		// between connect and getpeername (55, ENOTCONN) or after the
		// request was sent (56, "reset by peer").
		if code != 7 && code != 55 && code != 56 {
			t.Errorf("%s: curl exit %d %q, want a reset (7, 55 or 56)", c.name, code, out)
		}
		if in.sawAny() {
			t.Errorf("%s: the internet saw a connection", c.name)
		}
		if !waitLog(d, c.reason) {
			t.Errorf("%s: no log line %q", c.name, c.reason)
		}
		d.deleteQuiet(sb.ID)
	}
	if proxy.AuthFailures() == failures {
		t.Error("the proxy saw no failed authentication")
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for i := 0; !ok(); i++ {
		if i == 50 {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitLog(d *daemon, s string) bool { return waitLogFor(d, s, 5*time.Second) }

// updates: PUT …/network replaces the proxy with the rest: denyOut still
// decides first; an update without egressProxy sends traffic directly.
func updates(t *testing.T, d *daemon, in *internet, proxy *socks5test.Server, sb *sandbox, paddr string) {
	put := func(body map[string]any) {
		if code := d.api("PUT", "/sandboxes/"+sb.ID+"/network", body, nil); code != 204 {
			t.Fatalf("PUT network %v = %d", body, code)
		}
	}
	put(map[string]any{"denyOut": []string{inetB}, "egressProxy": proxyCfg(paddr, proxyPass)})
	n := len(proxy.Requests())
	expect(t, "denyOut via proxy", probe(t, sb, map[string]string{"a": curl("http://" + inetA + "/"), "b": curl("http://" + inetB + "/")}),
		map[string]bool{"a": true, "b": false})
	if asked(proxy, inetB+":80") || len(proxy.Requests()) != n+1 {
		t.Errorf("proxy asked for %v after denyOut %s", proxy.Requests()[n:], inetB)
	}
	in.resetPeers()
	put(map[string]any{})
	n = len(proxy.Requests())
	mustRun(t, sb, curl("http://"+inetB+"/"))
	mustRun(t, sb, udpLeak) // the UDP probe does work once the sandbox is direct
	if !in.sawPeer("11.210.0.1") || len(proxy.Requests()) != n {
		t.Errorf("without egressProxy: internet saw %v, proxy %d new requests; want direct", in.peers, len(proxy.Requests())-n)
	}
	put(map[string]any{"egressProxy": proxyCfg(paddr, proxyPass)})
}

// acrossPause (runsc): a paused and resumed sandbox still goes through its
// proxy, on its new link.
func acrossPause(t *testing.T, d *daemon, proxy *socks5test.Server, paddr string) {
	sb := d.create(map[string]any{"network": map[string]any{"allowOut": []string{"allowed.test"}, "egressProxy": proxyCfg(paddr, proxyPass)}})
	mustRun(t, sb, "nohup curl -sN http://allowed.test:8080/endless >/dev/null 2>&1 &")
	waitFor(t, "a long-lived tunnel", func() bool { return proxy.Open() == 1 })
	if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 204 {
		t.Fatalf("pause: %d\n%s", code, tail(d.log.String(), 2000))
	}
	// the paused sandbox's link is gone, and no FIN ever comes from it
	waitFor(t, "the paused sandbox's tunnel closed at the proxy", func() bool { return proxy.Open() == 0 })
	if code := d.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 60}, nil); code != 201 {
		t.Fatalf("resume: %d\n%s", code, tail(d.log.String(), 2000))
	}
	n := len(proxy.Requests())
	mustRun(t, sb, "pkill curl; getent hosts allowed.test && "+curlPatient("http://allowed.test/"))
	if r := proxy.Requests(); len(r) != n+1 || r[n] != inetA+":80" {
		t.Errorf("after resume the proxy was asked for %v, want %s:80", r[n:], inetA)
	}
	d.deleteQuiet(sb.ID)
	noNftResidue(t, sb.ID)
}

// curlPatient is curl for a connection that must succeed right after a
// pause/resume or a daemon restart: 15 s, not curl's 3 s (meant for
// connections that must fail), which the first connection of a runsc
// sandbox once took up on a machine loaded by a full CI run.
func curlPatient(url string) string { return "curl -fsS -m 15 " + url }

// restarted: while the daemon is down a proxied sandbox's connections
// fail (the redirect meets no listener); the next daemon re-adopts it and
// its tunnel (on a new port) sends it through the proxy again.
func restarted(t *testing.T, d *daemon, sb *sandbox, proxy *socks5test.Server, start func(string) *daemon) *daemon {
	mustRun(t, sb, "nohup sh -c 'sleep 3; "+curl("http://"+inetA+"/")+" >/tmp/out 2>&1; echo $? >/tmp/rc' >/dev/null 2>&1 &")
	d.stop(syscall.SIGKILL)
	time.Sleep(6 * time.Second)
	n := len(proxy.Requests())
	d2 := start(d.dataDir)
	sb.d = d2
	t.Cleanup(func() { d2.deleteQuiet(sb.ID) }) // before d2 stops
	if rc := strings.TrimSpace(mustRun(t, sb, "cat /tmp/rc")); rc == "0" || len(proxy.Requests()) != n {
		t.Errorf("daemon down: curl exit %q, proxy asked %v; want a failure and no request", rc, proxy.Requests()[n:])
	}
	mustRun(t, sb, curlPatient("http://"+inetA+"/"))
	if !asked(proxy, inetA+":80") || len(proxy.Requests()) != n+1 {
		t.Errorf("re-adopted: proxy asked %v, want %s:80", proxy.Requests()[n:], inetA)
	}
	return d2
}

// notShown: getInfo shows the proxy without its password; no file of the
// data dir holds it (the record has it sealed with the secrets key, the
// database is 0600 anyway), nor does the log.
func notShown(t *testing.T, d *daemon, id string) {
	var info struct {
		Network map[string]any `json:"network"`
	}
	if code := d.api("GET", "/sandboxes/"+id, nil, &info); code != 200 {
		t.Fatalf("get = %d", code)
	}
	if p, _ := info.Network["egressProxy"].(map[string]any); p["username"] != proxyUser || p["address"] == nil || p["password"] != nil {
		t.Errorf("getInfo egressProxy = %v, want address and username only", p)
	}
	for _, pw := range []string{proxyPass, "wrong-pw-77"} {
		if strings.Contains(d.log.String(), pw) {
			t.Errorf("the daemon's log holds a password")
		}
	}
	_ = filepath.WalkDir(d.dataDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() && e.Name() == "run" {
			return fs.SkipDir
		}
		if !e.Type().IsRegular() {
			return nil
		}
		if st, _ := os.Stat(p); strings.HasPrefix(e.Name(), "sbx.db") && st.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", p, st.Mode().Perm())
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), proxyPass) {
			t.Errorf("%s holds the proxy password", p)
		}
		return nil
	})
}
