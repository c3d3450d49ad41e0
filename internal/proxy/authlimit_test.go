package proxy

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/envdsig"
	"github.com/sbx-dev/sbx/internal/ratelimit"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// from is a client whose connections come from ip (a loopback address).
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestFailedAuthLimited: wrong access tokens and signed /files URLs no
// sandbox made are limited per remote address, as the API's wrong keys:
// past the bound 429 with Retry-After; the address's right token, and
// another address's wrong one, are answered as before. Before, every one
// was answered 401 (and every signature searched every sandbox's token).
func TestFailedAuthLimited(t *testing.T) {
	front, p, a, _ := setupProxy(t, httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})))
	// The limiter's clock stands still: a flood meets exactly the burst
	// however long a loaded machine takes to send it (its tokens came back
	// meanwhile, and too few of the 30 past the burst were refused).
	at := time.Now()
	p.authLim.SetClock(func() time.Time { return at })
	do := func(c *http.Client, tok, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", front.URL+path, nil)
		if tok != "" {
			req.Header.Set("E2b-Sandbox-Id", a.ID)
		}
		if tok != "" && tok != "routed" {
			req.Header.Set("X-Access-Token", tok)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	flood := func(c *http.Client, tok, path string) {
		t.Helper()
		limited := 0
		for i := range authFailBurst + 30 {
			resp := do(c, tok, path)
			switch {
			case resp.StatusCode == 429 && resp.Header.Get("Retry-After") != "" && i >= authFailBurst:
				limited++
			case resp.StatusCode != 401:
				t.Fatalf("failure %d of %s: %d (Retry-After %q)", i, path, resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		}
		if limited != 30 {
			t.Fatalf("%d failures of %s: %d refused 429, want the 30 past the burst", authFailBurst+30, path, limited)
		}
	}
	flood(from("127.0.0.2"), "wrong", "/process.Process/List")
	if code := do(from("127.0.0.2"), "token-a", "/process.Process/List").StatusCode; code != 200 {
		t.Fatalf("the flooding address's right token: %d, want 200", code)
	}
	if code := do(from("127.0.0.3"), "wrong", "/process.Process/List").StatusCode; code != 401 {
		t.Fatalf("another address's wrong token: %d, want 401", code)
	}
	flood(from("127.0.0.4"), "", "/files?path=/x&signature=v1_forged")
	good := "/files?path=/home/user/x.txt&signature=" + url.QueryEscape(envdsig.Sign("/home/user/x.txt", "read", "", "token-a", 0))
	if code := do(from("127.0.0.3"), "", good).StatusCode; code != 200 {
		t.Fatalf("another address's signed URL: %d, want 200", code)
	}
	// past the bound an address's signed URLs are not searched for at all
	if code := do(from("127.0.0.4"), "", good).StatusCode; code != 429 {
		t.Fatalf("a signed URL from the address past its bound: %d, want 429", code)
	}
	// a signed URL routed to its sandbox (the SDK's downloadUrl, on the
	// sandbox's host) is checked here too, as its agent checks it
	flood(from("127.0.0.5"), "routed", "/files?path=/x&signature=v1_forged")
	if code := do(from("127.0.0.5"), "routed", good).StatusCode; code != 200 {
		t.Fatalf("a routed signed URL from the flooding address: %d, want 200", code)
	}
}

// TestWrongTrafficTokenLimited: a wrong e2b-traffic-access-token (403) on
// a sandbox's port counts as a failed authentication; /init's 403 does
// not.
func TestWrongTrafficTokenLimited(t *testing.T) {
	in := sandbox.Info{Sandbox: store.Sandbox{ID: sandbox.NewID(), State: "running", EnvdToken: "tok", TrafficTok: "traffic"}, AgentAddr: "127.0.0.1:1"}
	p := New(fakeSandboxes{byID: map[string]sandbox.Info{in.ID: in}}, "", writeErr, slog.New(slog.DiscardHandler))
	p.SetAuthLimiter(ratelimit.New(1, 3))
	serve := func(port, path, hdr, val string) int {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = "192.0.2.1:1234"
		r.Header.Set("E2b-Sandbox-Id", in.ID)
		r.Header.Set("E2b-Sandbox-Port", port)
		r.Header.Set(hdr, val)
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		return w.Code
	}
	for range 5 {
		if code := serve(strconv.Itoa(EnvdPort), "/init", "X-Access-Token", "tok"); code != 403 {
			t.Fatalf("/init: %d, want 403 every time", code)
		}
	}
	var codes []int
	for range 5 {
		codes = append(codes, serve("8080", "/", "E2b-Traffic-Access-Token", "wrong"))
	}
	if !slices.Equal(codes, []int{403, 403, 403, 429, 429}) {
		t.Fatalf("wrong traffic tokens: %v, want 3 × 403 then 429", codes)
	}
}
