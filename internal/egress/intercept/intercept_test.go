package intercept

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress/egresstest"
	"github.com/sbx-dev/sbx/internal/egress/rules"
	"github.com/sbx-dev/sbx/internal/secrets"
)

const (
	testName   = "example.com" // httptest's certificate is for example.com
	testSecret = "sk-interceptor-SECRET-77"
)

// rig is an interceptor in front of an upstream server, reachable on a
// local listener that plays the guard: it peeks the first bytes and calls
// Handle as the guard does.
type rig struct {
	ic       *Interceptor
	up       *httptest.Server
	hits     atomic.Int32
	ln       net.Listener
	clientCA *x509.CertPool
	mu       sync.Mutex
	secret   map[string]string
	rules    string
	used     []string
}

func newRig(t testing.TB, tlsOn bool, h http.HandlerFunc) *rig {
	t.Helper()
	r := &rig{secret: map[string]string{"key": testSecret},
		rules: `{"example.com": [{"transform": {"headers": {"Authorization": "Bearer ${e2b.secrets.key}"}}}]}`}
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { r.hits.Add(1); h(w, req) })
	if tlsOn {
		r.up = httptest.NewTLSServer(wrapped)
	} else {
		r.up = httptest.NewServer(wrapped)
	}
	t.Cleanup(r.up.Close)
	ca, _, err := LoadCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if tlsOn {
		roots.AddCert(r.up.Certificate())
	}
	r.clientCA = x509.NewCertPool()
	r.clientCA.AddCert(ca.Cert())
	r.ic = &Interceptor{CA: ca, RootCAs: roots,
		Rules: func(sb string) (rules.Set, string, bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			s, err := rules.Parse([]byte(r.rules))
			return s, "team", err == nil && sb == "sb1"
		},
		Secret: func(_ context.Context, team, n string) (string, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if v, ok := r.secret[n]; ok && team == "team" {
				return v, nil
			}
			return "", fmt.Errorf("%w: %q", secrets.ErrNotFound, n)
		},
		Used: func(sb, host string, names []string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.used = append(r.used, sb+" "+host+" "+strings.Join(names, ","))
		},
	}
	r.ln, _ = net.Listen("tcp", "127.0.0.1:0")
	dst := netip.MustParseAddrPort(r.up.Listener.Addr().String())
	egresstest.Serve(t, r.ln, func(_ context.Context, c net.Conn) { r.guard(c, dst) })
	return r
}

// guard hands c to the interceptor as the daemon's guard does.
func (r *rig) guard(c net.Conn, dst netip.AddrPort) {
	defer c.Close()
	buf := make([]byte, 16<<10)
	n, _ := c.Read(buf)
	if !r.ic.Handle(context.Background(), c, "sb1", testName, dst, buf[:n]) {
		c.Write([]byte("HTTP/1.1 599 not intercepted\r\nContent-Length: 0\r\n\r\n"))
	}
}

// client talks to the rig as a sandbox does: every dial lands on the
// guard; TLS trusts the interception CA.
func (r *rig) client(tlsOn bool, protos ...string) *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", r.ln.Addr().String())
		},
		TLSClientConfig:   &tls.Config{RootCAs: r.clientCA, NextProtos: protos},
		ForceAttemptHTTP2: len(protos) > 0,
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func echoHeaders(w http.ResponseWriter, r *http.Request) {
	_ = json.NewEncoder(w).Encode(map[string]any{"host": r.Host, "auth": r.Header.Get("Authorization"),
		"xff": r.Header.Get("X-Forwarded-For"), "proto": r.Proto})
}

func get(t *testing.T, c *http.Client, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestInjects: over HTTPS and plain HTTP the upstream gets the rule's
// header with the secret (a client's own value overridden), no
// X-Forwarded-For, HTTP/1.1; the use is reported by name.
func TestInjects(t *testing.T) {
	for _, tlsOn := range []bool{true, false} {
		t.Run(fmt.Sprint("tls=", tlsOn), func(t *testing.T) {
			r := newRig(t, tlsOn, echoHeaders)
			scheme := map[bool]string{true: "https", false: "http"}[tlsOn]
			resp, body := get(t, r.client(tlsOn), scheme+"://example.com/x", map[string]string{"Authorization": "mine"})
			var got map[string]string
			_ = json.Unmarshal([]byte(body), &got)
			if resp.StatusCode != 200 || got["auth"] != "Bearer "+testSecret || got["xff"] != "" || got["host"] != testName {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if len(r.used) != 1 || r.used[0] != "sb1 example.com key" {
				t.Errorf("used = %v", r.used)
			}
		})
	}
}

// TestRefusesMisdirection: a Host other than the connection's name (on
// the first or a later request), absolute-form and CONNECT are refused
// before anything reaches upstream, and the answer does not echo headers.
func TestRefusesMisdirection(t *testing.T) {
	r := newRig(t, true, echoHeaders)
	c := r.client(true)
	for _, host := range []string{"other.com", "example.com.evil.com", "127.0.0.1"} {
		resp, body := get(t, c, "https://example.com/", map[string]string{"Host": host, "X-Echo-Me": "canary-123"})
		if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, "canary-123") || strings.Contains(body, testSecret) {
			t.Errorf("Host %s: %d %s", host, resp.StatusCode, body)
		}
	}
	for _, raw := range []string{"CONNECT other.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET http://other.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n"} {
		conn, err := tls.Dial("tcp", r.ln.Addr().String(), &tls.Config{RootCAs: r.clientCA, ServerName: testName})
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(raw))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode/100 != 4 {
			t.Errorf("%q: %v %v", raw, resp, err)
		}
		conn.Close()
	}
	if n := r.hits.Load(); n != 0 {
		t.Errorf("upstream got %d requests", n)
	}
}

// TestTraceRefused: TRACE (and TRACK) make a server that implements them
// echo the request it got, the injected header with the secret included
// (Apache's default): they are refused with 405 before any secret is read,
// over HTTPS and plain HTTP, whatever the method's case.
func TestTraceRefused(t *testing.T) {
	trace := func(w http.ResponseWriter, r *http.Request) {
		b, _ := httputil.DumpRequest(r, false) // as a TRACE-enabled server answers
		_, _ = w.Write(b)
	}
	for _, tlsOn := range []bool{true, false} {
		r := newRig(t, tlsOn, trace)
		scheme := map[bool]string{true: "https", false: "http"}[tlsOn]
		for _, method := range []string{"TRACE", "TRACK", "trace"} {
			req, _ := http.NewRequest(method, scheme+"://example.com/", nil)
			resp, err := r.client(tlsOn).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || strings.Contains(string(b), testSecret) {
				t.Errorf("%s %s: %d %q", scheme, method, resp.StatusCode, b)
			}
		}
		if n := r.hits.Load(); n != 0 {
			t.Errorf("%s: upstream got %d requests", scheme, n)
		}
		r.mu.Lock()
		if len(r.used) != 0 {
			t.Errorf("%s: secrets reported used: %v", scheme, r.used)
		}
		r.mu.Unlock()
	}
}

// TestALPNOnlyHTTP1: a client offering h2 gets HTTP/1.1 (no coalescing).
func TestALPNOnlyHTTP1(t *testing.T) {
	r := newRig(t, true, echoHeaders)
	conn, err := tls.Dial("tcp", r.ln.Addr().String(), &tls.Config{RootCAs: r.clientCA, ServerName: testName, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("ALPN = %q", p)
	}
	// and the leaf is for the name only, signed by the CA
	leaf := conn.ConnectionState().PeerCertificates[0]
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != testName || leaf.IsCA {
		t.Errorf("leaf %v", leaf.DNSNames)
	}
}

// TestFailsClosed: a missing secret, an upstream whose certificate does
// not verify: 502, nothing of the secret or request in the answer.
func TestFailsClosed(t *testing.T) {
	r := newRig(t, true, echoHeaders)
	r.mu.Lock()
	r.rules = `{"example.com": [{"transform": {"headers": {"X-Key": "${e2b.secrets.gone}"}}}]}`
	r.mu.Unlock()
	resp, body := get(t, r.client(true), "https://example.com/", nil)
	if resp.StatusCode != 502 || !strings.Contains(body, `"gone"`) || r.hits.Load() != 0 {
		t.Errorf("missing secret: %d %s (upstream hits %d)", resp.StatusCode, body, r.hits.Load())
	}
	r2 := newRig(t, true, echoHeaders)
	r2.ic.RootCAs = x509.NewCertPool() // the upstream's CA not trusted
	resp, body = get(t, r2.client(true), "https://example.com/", nil)
	if resp.StatusCode != 502 || !strings.Contains(body, "did not verify") || strings.Contains(body, testSecret) || r2.hits.Load() != 0 {
		t.Errorf("unverified upstream: %d %s", resp.StatusCode, body)
	}
}

// TestRedirectNotFollowed: a 3xx to another host goes back to the client.
func TestRedirectNotFollowed(t *testing.T) {
	r := newRig(t, true, func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "https://other.com/steal", http.StatusFound)
	})
	resp, _ := get(t, r.client(true), "https://example.com/", nil)
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "https://other.com/steal" || r.hits.Load() != 1 {
		t.Errorf("%d %v hits=%d", resp.StatusCode, resp.Header, r.hits.Load())
	}
}

// TestUpstreamHeaderBounded: an upstream's response header (a server the
// sandbox chooses) is read up to untrusted.MaxHeaderBytes, as the proxy
// reads a sandbox server's: past it the sandbox gets 502 and the daemon
// held no more of it. Before, up to net/http's 10 MiB, with no header
// timeout.
func TestUpstreamHeaderBounded(t *testing.T) {
	for _, tt := range []struct {
		size, want int
	}{{16 << 10, http.StatusOK}, {2 << 20, http.StatusBadGateway}} {
		r := newRig(t, true, func(w http.ResponseWriter, _ *http.Request) {
			for range tt.size / 4096 {
				w.Header().Add("X-Big", strings.Repeat("a", 4096))
			}
		})
		if resp, _ := get(t, r.client(true), "https://example.com/", nil); resp.StatusCode != tt.want {
			t.Errorf("a %d-byte header: %d, want %d", tt.size, resp.StatusCode, tt.want)
		}
	}
}

// TestPerRequestResolution: on one kept-alive connection, an updated
// secret is used by the next request; a deleted one fails it closed.
func TestPerRequestResolution(t *testing.T) {
	r := newRig(t, true, echoHeaders)
	c := r.client(true)
	for i, want := range []string{"Bearer " + testSecret, "Bearer v2", ""} {
		_, body := get(t, c, "https://example.com/", nil)
		if want == "" {
			if !strings.Contains(body, "not found") {
				t.Errorf("after delete: %s", body)
			}
			break
		}
		if !strings.Contains(body, `"auth":"`+want+`"`) {
			t.Errorf("request %d: %s", i, body)
		}
		r.mu.Lock()
		if i == 0 {
			r.secret["key"] = "v2"
		} else {
			delete(r.secret, "key")
		}
		r.mu.Unlock()
	}
}

// TestStreaming: server-sent events arrive as sent (not buffered), a large
// body passes whole, a chunked upload streams.
func TestStreaming(t *testing.T) {
	release := make(chan struct{})
	r := newRig(t, true, func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			<-release
			fmt.Fprint(w, "data: two\n\n")
		case "/big":
			w.Write([]byte(strings.Repeat("x", 8<<20)))
		case "/upload":
			n, _ := io.Copy(io.Discard, req.Body)
			fmt.Fprint(w, n)
		}
	})
	c := r.client(true)
	resp, err := c.Get("https://example.com/sse")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: one\n" {
		t.Fatalf("first event %q %v", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if !strings.Contains(string(rest), "data: two") {
		t.Errorf("second event: %q", rest)
	}
	_, body := get(t, c, "https://example.com/big", nil)
	if len(body) != 8<<20 {
		t.Errorf("big body %d bytes", len(body))
	}
	pr, pw := io.Pipe()
	go func() {
		for range 64 {
			pw.Write([]byte(strings.Repeat("u", 64<<10)))
		}
		pw.Close()
	}()
	resp, err = c.Post("https://example.com/upload", "application/octet-stream", pr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != fmt.Sprint(64<<16) {
		t.Errorf("upload: %s", b)
	}
}

// TestNoRuleNotHandled: a name without a rule, or another sandbox, is left
// to the guard (Handle reports false and reads nothing).
func TestNoRuleNotHandled(t *testing.T) {
	r := newRig(t, true, echoHeaders)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	for _, c := range []struct{ sb, name string }{{"sb1", "other.com"}, {"sb2", testName}} {
		if r.ic.Handle(context.Background(), a, c.sb, c.name, netip.AddrPort{}, []byte{0x16}) {
			t.Errorf("%+v handled", c)
		}
	}
}

func TestCALeaf(t *testing.T) {
	dir := t.TempDir()
	ca, gen, err := LoadCA(dir)
	if err != nil || !gen {
		t.Fatal(err)
	}
	again, gen, err := LoadCA(dir)
	if err != nil || gen || string(again.CertPEM()) != string(ca.CertPEM()) {
		t.Fatal("CA not reused", err)
	}
	l1, _ := ca.Leaf("a.example.com")
	l2, _ := ca.Leaf("a.example.com")
	if l1 != l2 {
		t.Error("leaf not cached")
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert())
	for _, c := range []struct {
		name string
		ok   bool
	}{{"a.example.com", true}, {"b.example.com", false}, {"example.com", false}} {
		_, err := l1.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: c.name})
		if (err == nil) != c.ok {
			t.Errorf("leaf for a.example.com verifies %s: %v", c.name, err)
		}
	}
	ca.now = func() time.Time { return time.Now().Add(leafValidity) }
	if l3, _ := ca.Leaf("a.example.com"); l3 == l1 {
		t.Error("an expiring leaf was not minted again")
	}
}

// TestUpgrade: a WebSocket-style upgrade gets the injected header on its
// handshake and then carries bytes both ways (the connection is kept open
// until the upgraded stream ends).
func TestUpgrade(t *testing.T) {
	r := newRig(t, true, func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Upgrade") != "websocket" || req.Header.Get("Authorization") != "Bearer "+testSecret {
			http.Error(w, "no upgrade", 400)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		buf := make([]byte, 64)
		for {
			n, err := brw.Read(buf)
			if err != nil {
				return
			}
			c.Write(buf[:n])
		}
	})
	conn, err := tls.Dial("tcp", r.ln.Addr().String(), &tls.Config{RootCAs: r.clientCA, ServerName: testName})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET /ws HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	for _, msg := range []string{"ping", "pong-after-a-while"} {
		time.Sleep(100 * time.Millisecond)
		conn.Write([]byte(msg))
		got := make([]byte, len(msg))
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
			t.Fatalf("echo %q: %q %v", msg, got, err)
		}
	}
}
