package guard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
)

const resolvedIP = "93.184.216.34"

func checksum(r io.Reader) (int64, []byte) {
	h := sha256.New()
	n, _ := io.Copy(h, r)
	return n, h.Sum(nil)
}

// payload is n deterministic pseudo-random bytes.
func payload(n int) []byte {
	b := make([]byte, n)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(b)
	return b
}

func allowExample(t testing.TB) egress.Policy {
	p, err := egress.Parse(nil, []string{"example.com", "*.example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func resolvedExample() *egress.Resolutions {
	r := &egress.Resolutions{}
	r.Add("sb1", "example.com.", addrs(resolvedIP), time.Minute)
	r.Add("sb1", "other.com.", addrs("93.184.216.99"), time.Minute) // not allowed by the policy
	return r
}

// An allowed name on an address the DNS filter resolved for it is
// forwarded over TLS: large transfers both ways arrive intact.
func TestGuardForwardsTLS(t *testing.T) {
	big := payload(8 << 20)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			n, sum := checksum(r.Body)
			fmt.Fprintf(w, "%d %x", n, sum)
			return
		}
		_, _ = w.Write(big)
	}))
	srv.StartTLS() // its certificate is for example.com
	defer srv.Close()
	e := startGuard(t, guardSetup{policy: allowExample(t), dst: resolvedIP + ":443",
		upstream: srv.Listener.Addr().String(), resolved: resolvedExample()})
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp4", e.addr)
	}
	cl := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	defer tr.CloseIdleConnections()

	resp, err := cl.Get("https://example.com/big")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("download: %d bytes (want %d), %v", len(got), len(big), err)
	}
	resp, err = cl.Post("https://example.com/sum", "application/octet-stream", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	n, sum := checksum(bytes.NewReader(big))
	if want := fmt.Sprintf("%d %x", n, sum); string(answer) != want {
		t.Fatalf("upload: server saw %q, want %q", answer, want)
	}
	if len(e.blocked) != 0 {
		t.Fatalf("blocked: %+v", <-e.blocked)
	}
}

// Plain HTTP on port 80 is checked by its Host header; half-closes pass
// through both ways (the server answers after the client's EOF).
func TestGuardForwardsHTTPWithHalfClose(t *testing.T) {
	e := startGuard(t, guardSetup{policy: allowExample(t), dst: resolvedIP + ":80",
		upstream: sumServer(t), resolved: resolvedExample()})
	req := append([]byte("PUT /up HTTP/1.1\r\nHost: example.com\r\n\r\n"), payload(4<<20)...)
	c := e.dial(t)
	for i := 0; i < len(req); i += 1000 { // in pieces: the header arrives fragmented
		if _, err := c.Write(req[i:min(i+1000, len(req))]); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	answer, err := io.ReadAll(c)
	n, sum := checksum(bytes.NewReader(req))
	if want := fmt.Sprintf("%d %x", n, sum); string(answer) != want || err != nil {
		t.Fatalf("server saw %q (%v), want %q", answer, err, want)
	}
}

// Destinations the policy's IP rules allow need no name at all.
func TestGuardForwardsAllowedIP(t *testing.T) {
	p, _ := egress.Parse(nil, []string{"example.com", "8.8.8.0/24"}, nil)
	e := startGuard(t, guardSetup{policy: p, dst: "8.8.8.8:443", upstream: sumServer(t)})
	c := e.dial(t)
	_, _ = c.Write([]byte("\x00junk, not TLS"))
	_ = c.CloseWrite()
	answer, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(answer), "14 ") {
		t.Fatalf("answer %q", answer)
	}
}

// Every way around the name check is refused before anything is dialed.
func TestGuardBlocks(t *testing.T) {
	hello := func(name string) []byte {
		return clientHello(t, &tls.Config{ServerName: name, InsecureSkipVerify: name == ""})
	}
	open, _ := egress.Parse(nil, nil, []string{"93.184.216.0/24"})
	for _, tc := range []struct {
		name    string
		policy  egress.Policy
		dst     string
		unknown bool
		send    []byte
		reason  string
	}{
		{"spoofed ip (curl --resolve, /etc/hosts)", allowExample(t), "93.184.216.77:443", false, hello("example.com"), ReasonNotResolved},
		{"ip resolved for another name", allowExample(t), "93.184.216.99:443", false, hello("example.com"), ReasonNotResolved},
		{"name not allowed", allowExample(t), "93.184.216.99:443", false, hello("other.com"), ReasonNameNotAllowed},
		{"look-alike name", allowExample(t), resolvedIP + ":443", false, hello("evil-example.com"), ReasonNameNotAllowed},
		{"wildcard name not resolved", allowExample(t), resolvedIP + ":443", false, hello("a.example.com"), ReasonNotResolved},
		{"missing sni", allowExample(t), resolvedIP + ":443", false, hello(""), ReasonNoSNI},
		{"ip literal", allowExample(t), resolvedIP + ":443", false, hello(resolvedIP), ReasonNoSNI},
		{"http ip literal", allowExample(t), resolvedIP + ":80", false, []byte("GET / HTTP/1.1\r\nHost: " + resolvedIP + "\r\n\r\n"), ReasonNoHost},
		{"http name not allowed", allowExample(t), resolvedIP + ":80", false, []byte("GET / HTTP/1.1\r\nHost: evil.com\r\n\r\n"), ReasonNameNotAllowed},
		{"http absolute url", allowExample(t), resolvedIP + ":80", false, []byte("GET http://evil.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n"), ReasonBadRequest},
		{"junk on 443", allowExample(t), resolvedIP + ":443", false, []byte("\x00\x01\x02 junk"), ReasonBadRequest},
		{"tls garbage", allowExample(t), resolvedIP + ":443", false, []byte{0x16, 3, 1, 0, 4, 2, 0, 0, 0}, ReasonBadHello},
		{"metadata", allowExample(t), "169.254.169.254:80", false, []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), ReasonIPBlocked},
		{"private", egress.Policy{}, "10.1.2.3:443", false, hello("example.com"), ReasonIPBlocked},
		{"deny all", egress.Policy{DenyAll: true}, resolvedIP + ":443", false, hello("example.com"), ReasonNameNotAllowed},
		{"denyOut under an open policy", open, resolvedIP + ":443", false, hello("example.com"), ReasonIPDenied},
		{"unknown source", allowExample(t), resolvedIP + ":443", true, hello("example.com"), ReasonUnknownSource},
		{"closed early", allowExample(t), resolvedIP + ":443", false, hello("example.com")[:20], ReasonClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startGuard(t, guardSetup{policy: tc.policy, dst: tc.dst, unknown: tc.unknown,
				upstream: sumServer(t), resolved: resolvedExample()})
			c := e.dial(t)
			_, _ = c.Write(tc.send)
			if tc.reason == ReasonClosed {
				_ = c.CloseWrite()
			}
			b := e.wantBlocked(t, tc.reason)
			wantClosed(t, c)
			if n := e.dials.Load(); n != 0 {
				t.Fatalf("dialed %d times", n)
			}
			if !tc.unknown && (b.sandbox != "sb1" || b.dst != tc.dst) {
				t.Fatalf("reported %+v", b)
			}
		})
	}
}

// A client that sends its hello slowly (or never) is cut at the handshake
// timeout; one that sends too much before a name is cut at MaxPeekBytes.
func TestGuardBounds(t *testing.T) {
	t.Run("slowloris", func(t *testing.T) {
		e := startGuard(t, guardSetup{policy: allowExample(t), dst: resolvedIP + ":443", resolved: resolvedExample(),
			mod: func(g *Guard) { g.HandshakeTimeout = 300 * time.Millisecond }})
		c := e.dial(t)
		hello := clientHello(t, &tls.Config{ServerName: "example.com"})
		for _, b := range hello[:10] { // a byte at a time, then nothing
			_, _ = c.Write([]byte{b})
			time.Sleep(10 * time.Millisecond)
		}
		e.wantBlocked(t, ReasonTimeout)
		wantClosed(t, c)
	})
	t.Run("oversized header", func(t *testing.T) {
		e := startGuard(t, guardSetup{policy: allowExample(t), dst: resolvedIP + ":80", resolved: resolvedExample(),
			mod: func(g *Guard) { g.MaxPeekBytes = 1024 }})
		c := e.dial(t)
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\nX-Pad: " + strings.Repeat("a", 2000) + "\r\nHost: example.com\r\n\r\n"))
		e.wantBlocked(t, ReasonTooLarge)
		wantClosed(t, c)
	})
	t.Run("connections per sandbox", func(t *testing.T) {
		e := startGuard(t, guardSetup{policy: allowExample(t), dst: resolvedIP + ":443", resolved: resolvedExample(),
			mod: func(g *Guard) { g.MaxConnsPerSandbox = 2 }})
		e.dial(t)
		e.dial(t)
		waitConns(t, e.g, "sb1", 2)
		third := e.dial(t)
		e.wantBlocked(t, ReasonTooMany)
		wantClosed(t, third)
	})
}

// waitConns waits until the guard counts n connections for sandbox.
func waitConns(t *testing.T, g *Guard, sandbox string, n int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		g.mu.Lock()
		got := g.conns[sandbox]
		g.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("guard never counted %d connections for %s", n, sandbox)
}

// Cancelling Serve's context closes every connection, peeking or
// forwarding, and Serve returns (startGuard's cleanup checks that).
func TestGuardStopsOnCancel(t *testing.T) {
	e := startGuard(t, guardSetup{policy: allowExample(t), dst: resolvedIP + ":80",
		upstream: sumServer(t), resolved: resolvedExample()})
	fwd := e.dial(t)
	_, _ = fwd.Write([]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")) // forwarded, kept open
	peeking := e.dial(t)
	_, _ = peeking.Write([]byte("GET / HT")) // stuck peeking
	waitConns(t, e.g, "sb1", 2)
	e.stop(t)
	wantClosed(t, peeking)
	_ = fwd.SetReadDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.ReadAll(fwd); err != nil && isTimeout(err) {
		t.Fatal("forwarded connection still open after cancel")
	}
	if _, err := net.Dial("tcp4", e.addr); err == nil {
		t.Fatal("listener still open after cancel")
	}
	e.g.mu.Lock()
	defer e.g.mu.Unlock()
	if len(e.g.conns) != 0 {
		t.Fatalf("connections still counted: %v", e.g.conns)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// A name that resolves to one of the host's own addresses (a DNS answer
// the sandbox's own allowed domain gives, whatever its range) is refused
// before anything is dialed, TLS or plain HTTP, even when an allowOut CIDR
// covers it: the guard dials from the host, where the address is the
// host's services, which the kernel keeps from the sandbox itself.
func TestGuardBlocksHostAddr(t *testing.T) {
	cidr, _ := egress.Parse(nil, []string{"example.com", "93.184.216.0/24"}, nil)
	for _, tc := range []struct {
		name   string
		policy egress.Policy
		dst    string
		send   []byte
	}{
		{"tls", allowExample(t), resolvedIP + ":443", clientHello(t, &tls.Config{ServerName: "example.com"})},
		{"http", allowExample(t), resolvedIP + ":80", []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")},
		{"allowed cidr", cidr, resolvedIP + ":443", clientHello(t, &tls.Config{ServerName: "example.com"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startGuard(t, guardSetup{policy: tc.policy, dst: tc.dst, upstream: sumServer(t), resolved: resolvedExample(),
				mod: func(g *Guard) { g.hostAddr = func(ip netip.Addr) bool { return ip.String() == resolvedIP } }})
			c := e.dial(t)
			_, _ = c.Write(tc.send)
			e.wantBlocked(t, ReasonHostAddr)
			wantClosed(t, c)
			if n := e.dials.Load(); n != 0 {
				t.Fatalf("dialed %d times", n)
			}
		})
	}
}

// A destination in Never (the sandbox subnet, here a public-looking one an
// operator chose) is refused like an always-blocked one, before any name is
// read: another sandbox is no upstream, whatever DNS said.
func TestGuardBlocksNever(t *testing.T) {
	e := startGuard(t, guardSetup{policy: allowExample(t), dst: resolvedIP + ":80", upstream: sumServer(t), resolved: resolvedExample(),
		mod: func(g *Guard) { g.Never = []netip.Prefix{netip.MustParsePrefix("93.184.0.0/16")} }})
	c := e.dial(t)
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"))
	e.wantBlocked(t, ReasonIPBlocked)
	wantClosed(t, c)
	if n := e.dials.Load(); n != 0 {
		t.Fatalf("dialed %d times", n)
	}
}
