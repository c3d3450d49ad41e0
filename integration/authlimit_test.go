package integration

import (
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/sbx-dev/sbx/internal/envdsig"
)

// Sandbox traffic with a wrong access token, and signed /files URLs that
// no sandbox's token made, are limited per client address, as the API's
// wrong keys: past the bound (burst 100, 20 a second) 429 with
// Retry-After; the flooding address's right token (or signature, routed to
// its sandbox) and another address's requests are answered as before.
// Before, every failure got its 401 (and every bad signature a search of
// every sandbox's token).
func TestSandboxTrafficFailedAuthLimited(t *testing.T) {
	requirements(t, "crun")
	d := startDaemon(t, "crun", "")
	sb := d.create(nil)
	clientFrom := func(ip string) *http.Client {
		dl := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: dl.DialContext}}
	}
	get := func(c *http.Client, tok, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", d.url+path, nil)
		if tok != "" { // "routed": no token, the sandbox named
			req.Header.Set("E2b-Sandbox-Id", sb.ID)
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
		for i := range 130 {
			resp := get(c, tok, path)
			switch {
			case resp.StatusCode == 429 && resp.Header.Get("Retry-After") != "" && i >= 100:
				limited++
			case resp.StatusCode != 401:
				t.Fatalf("failure %d of %s: %d", i, path, resp.StatusCode)
			}
		}
		if limited == 0 {
			t.Fatalf("130 failures of %s from one address: none refused 429", path)
		}
	}
	const file = "/files?path=/etc/hostname"
	flood(clientFrom("127.0.0.2"), "wrong", file)
	if code := get(clientFrom("127.0.0.2"), sb.Token, file).StatusCode; code != 200 {
		t.Fatalf("the flooding address's right token: %d, want 200", code)
	}
	if code := get(clientFrom("127.0.0.3"), "wrong", file).StatusCode; code != 401 {
		t.Fatalf("another address's wrong token: %d, want 401", code)
	}
	flood(clientFrom("127.0.0.4"), "", "/files?path=/etc/hostname&signature=v1_forged")
	signed := "/files?path=/etc/hostname&signature=" + url.QueryEscape(envdsig.Sign("/etc/hostname", "read", "", sb.Token, 0))
	if code := get(clientFrom("127.0.0.3"), "", signed).StatusCode; code != 200 {
		t.Fatalf("another address's signed URL: %d, want 200", code)
	}
	// routed to its sandbox, as the SDK's downloadUrl on the sandbox's host
	flood(clientFrom("127.0.0.5"), "routed", "/files?path=/etc/hostname&signature=v1_forged")
	if code := get(clientFrom("127.0.0.5"), "routed", signed).StatusCode; code != 200 {
		t.Fatalf("a routed signed URL from the flooding address: %d, want 200", code)
	}
}
