package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/secrets"
)

// proxyServer is an API whose node tunnels through proxies; a proxy at
// "internal.test" is refused as the real check refuses internal ones.
func proxyServer(t *testing.T) (*httptest.Server, *sandboxtest.Host, *memAudit) {
	aud := &memAudit{}
	seal, err := secrets.NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	a, h := newAPIAudited(t, func(c *sandbox.Config) {
		c.ProxySealer = seal
		c.ProxyCheck = func(_ context.Context, p egress.Proxy) error {
			if strings.HasPrefix(p.Address, "internal.test:") {
				return errors.New("egress proxy address not allowed: internal.test resolves to 10.0.0.1")
			}
			return nil
		}
	}, aud)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv, h, aud
}

func proxyOf(h *sandboxtest.Host, id string) *egress.Proxy {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	return h.Policies[id].Proxy
}

// TestEgressProxyAPI: egressProxy is accepted on create and update, put
// into the sandbox's policy with its credentials, shown by getInfo
// without the password, and the password is in no response or audit
// record; bad proxies are 400, and a node without a tunnel says 501.
func TestEgressProxyAPI(t *testing.T) {
	srv, h, aud := proxyServer(t)
	body := `{"templateID":"base","network":{"allowOut":["1.1.1.1"],"egressProxy":{"address":"proxy.test:1080","username":"u","password":"hunter2"}}}`
	code, sb := do(t, srv, "POST", "/v2/sandboxes", body, nil)
	if code != 201 {
		t.Fatalf("create = %d %v", code, sb)
	}
	id := sb["sandboxID"].(string)
	if p := proxyOf(h, id); p == nil || p.Address != "proxy.test:1080" || p.Username != "u" || p.Password.Reveal() != "hunter2" {
		t.Fatalf("policy proxy = %+v", p)
	}
	code, info := do(t, srv, "GET", "/sandboxes/"+id, "", nil)
	raw, _ := json.Marshal(info)
	if code != 200 || !strings.Contains(string(raw), `"egressProxy":{"address":"proxy.test:1080","username":"u"}`) || strings.Contains(string(raw), "passwordSealed") {
		t.Errorf("getInfo = %d %s", code, raw)
	}
	_, list := do(t, srv, "GET", "/v2/sandboxes", "", nil)
	listRaw, _ := json.Marshal(list)
	if code := put(t, srv, id, `{"egressProxy":{"address":"proxy.test:1081","username":"v","password":"pw-two"}}`); code != 204 {
		t.Fatalf("update = %d", code)
	}
	if p := proxyOf(h, id); p == nil || p.Address != "proxy.test:1081" || p.Password.Reveal() != "pw-two" {
		t.Errorf("updated proxy = %+v", p)
	}
	if code := put(t, srv, id, `{"allowOut":["1.1.1.1"]}`); code != 204 || proxyOf(h, id) != nil {
		t.Errorf("update without egressProxy = %d, proxy %+v; want it cleared", code, proxyOf(h, id))
	}
	audited, _ := json.Marshal(aud.recs)
	for _, s := range []string{string(raw), string(listRaw), string(audited)} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "pw-two") {
			t.Errorf("a password was shown: %s", s)
		}
	}
}

func put(t *testing.T, srv *httptest.Server, id, body string) int {
	code, _ := do(t, srv, "PUT", "/sandboxes/"+id+"/network", body, nil)
	return code
}

func TestEgressProxyBadInput(t *testing.T) {
	srv, h, _ := proxyServer(t)
	for _, tt := range []struct {
		proxy string
		code  int
		says  string
	}{
		{`{"address":"proxy.test"}`, 400, "host:port"},
		{`{"address":"proxy.test:0"}`, 400, "port"},
		{`{"address":"bad host:1"}`, 400, "neither an IP"},
		{`{"address":"proxy.test:1","password":"secret-x"}`, 400, "needs a username"},
		{`{"address":"proxy.test:1","username":"` + strings.Repeat("u", 256) + `"}`, 400, "at most 255"},
		{`{"address":"internal.test:1080"}`, 400, "not allowed"},
		{`"proxy.test:1080"`, 400, "network"},
	} {
		code, e := do(t, srv, "POST", "/v2/sandboxes", fmt.Sprintf(`{"templateID":"base","network":{"egressProxy":%s}}`, tt.proxy), nil)
		msg, _ := e["message"].(string)
		if code != tt.code || !strings.Contains(msg, tt.says) || strings.Contains(msg, "secret-x") {
			t.Errorf("egressProxy %s: %d %q, want %d saying %q", tt.proxy, code, msg, tt.code, tt.says)
		}
	}
	if h.Residue() != "" {
		t.Errorf("refused creates left %s", h.Residue())
	}
	if code, e := do(t, srv, "POST", "/v2/sandboxes", `{"network":{"egressProxy":null}}`, nil); code != 201 || proxyOf(h, e["sandboxID"].(string)) != nil {
		t.Errorf("egressProxy null: %d %v, want 201 and no proxy", code, e)
	}
	// Only the manager seals: a client's passwordSealed is dropped at the edge, never opened.
	code, e := do(t, srv, "POST", "/v2/sandboxes", `{"network":{"egressProxy":{"address":"proxy.test:1080","passwordSealed":"Zm9v"}}}`, nil)
	if p := proxyOf(h, fmt.Sprint(e["sandboxID"])); code != 201 || p == nil || p.Password.Reveal() != "" {
		t.Errorf("client passwordSealed: %d %v, proxy %+v; want 201, no password", code, e, p)
	}
	plain, _ := newServer(t)
	if code, e := do(t, plain, "POST", "/v2/sandboxes", `{"network":{"egressProxy":{"address":"1.2.3.4:1080"}}}`, nil); code != 501 {
		t.Errorf("node without a tunnel: %d %v, want 501", code, e)
	}
}
