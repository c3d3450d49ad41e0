package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/secrets"
)

const apiSecretValue = "sk-api-test-DO-NOT-LEAK-42"

// newSecretServer is the API with a Secrets API over a real store; aud
// receives its audit records.
func newSecretServer(t *testing.T) (*httptest.Server, *memAudit) {
	t.Helper()
	aud := &memAudit{}
	a, _ := newAPIAudited(t, nil, aud)
	st := openStore(t)
	seal, _ := secrets.NewSealer(bytes.Repeat([]byte{1}, secrets.KeySize))
	a.SetSecrets(secrets.New(st, seal))
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv, aud
}

// raw is one call's status, X-Next-Token and body.
func raw(t *testing.T, srv *httptest.Server, method, path, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Next-Token"), string(b)
}

// TestSecretsAPI: E2B's Secret routes and statuses; no answer and no audit
// record ever holds the value.
func TestSecretsAPI(t *testing.T) {
	srv, aud := newSecretServer(t)
	var bodies []string
	call := func(method, path, body string, want int) string {
		t.Helper()
		code, _, b := raw(t, srv, method, path, body)
		if code != want {
			t.Errorf("%s %s %s = %d %s, want %d", method, path, body, code, b, want)
		}
		bodies = append(bodies, b)
		return b
	}
	b := call("POST", "/secrets", `{"name":"My-Key","value":"`+apiSecretValue+`","metadata":{"k":"v"}}`, 201)
	var info struct {
		SecretID, Name string
		CurrentVersion int
		Metadata       map[string]string
		CreatedAt      string
	}
	_ = json.Unmarshal([]byte(b), &info)
	if info.Name != "my-key" || info.CurrentVersion != 1 || info.Metadata["k"] != "v" || info.CreatedAt == "" {
		t.Fatalf("create = %s", b)
	}
	call("POST", "/secrets", `{"name":"my-key","value":"x"}`, 409)
	call("POST", "/secrets", `{"name":"bad{name}","value":"`+apiSecretValue+`"}`, 400)
	call("POST", "/secrets", `{"name":"big","value":"`+strings.Repeat("v", secrets.MaxValueBytes+1)+`"}`, 400)
	call("POST", "/secrets", `{"name":"x","value":`, 400)
	call("GET", "/secrets/"+info.SecretID, "", 200)
	call("GET", "/secrets/my-key", "", 200)
	call("GET", "/secrets/nope", "", 404)
	if b := call("POST", "/secrets/my-key", `{"value":"`+apiSecretValue+`-2"}`, 200); !strings.Contains(b, `"currentVersion":2`) || !strings.Contains(b, `"k":"v"`) {
		t.Errorf("update = %s", b)
	}
	call("POST", "/secrets/nope", `{"value":"x"}`, 404)
	call("POST", "/secrets/my-key", `{"value":""}`, 400)
	call("GET", "/secrets?limit=0", "", 400)
	if b := call("GET", "/secrets", "", 200); !strings.Contains(b, info.SecretID) {
		t.Errorf("list = %s", b)
	}
	call("DELETE", "/secrets/"+info.SecretID, "", 204)
	call("DELETE", "/secrets/"+info.SecretID, "", 404)
	call("GET", "/secrets/my-key", "", 404)
	for _, b := range bodies {
		if strings.Contains(b, apiSecretValue) {
			t.Errorf("an answer holds the value: %s", b)
		}
	}
	for _, r := range aud.recs {
		if strings.Contains(fmt.Sprint(r), apiSecretValue) {
			t.Errorf("an audit record holds the value: %v", r)
		}
	}
}

// TestSecretsAPIPages: X-Next-Token pages through every secret once.
func TestSecretsAPIPages(t *testing.T) {
	srv, _ := newSecretServer(t)
	for i := range 5 {
		if code, _, b := raw(t, srv, "POST", "/secrets", fmt.Sprintf(`{"name":"s%d","value":"v"}`, i)); code != 201 {
			t.Fatal(code, b)
		}
	}
	seen, tok := 0, ""
	for pages := 1; ; pages++ {
		code, next, b := raw(t, srv, "GET", "/secrets?limit=2&nextToken="+tok, "")
		var page []map[string]any
		if code != 200 || json.Unmarshal([]byte(b), &page) != nil || pages > 3 {
			t.Fatalf("page %d: %d %s", pages, code, b)
		}
		seen += len(page)
		if next == "" {
			if pages != 3 || seen != 5 {
				t.Errorf("%d pages, %d secrets", pages, seen)
			}
			return
		}
		tok = next
	}
}

// TestRulesValidated: network.rules on create and updateNetwork are
// checked (domains in allowOut, headers, secrets of the caller's team
// existing) and shown by getInfo with placeholders, never values.
func TestRulesValidated(t *testing.T) {
	srv, _ := newSecretServer(t)
	if code, _, b := raw(t, srv, "POST", "/secrets", `{"name":"key","value":"`+apiSecretValue+`"}`); code != 201 {
		t.Fatal(code, b)
	}
	rule := func(dom, val string) string {
		return `{"` + dom + `":[{"transform":{"headers":{"Authorization":"` + val + `"}}}]}`
	}
	create := func(allow, rules string) (int, string) {
		code, _, b := raw(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","network":{"allowOut":[`+allow+`],"rules":`+rules+`}}`)
		return code, b
	}
	for _, c := range []struct {
		allow, rules, want string
		code               int
	}{
		{`"api.x.com"`, rule("api.x.com", "Bearer ${e2b.secrets.missing}"), "missing", 400},
		{`"api.x.com"`, rule("api.x.com", "Bearer ${e2b.secrets.key"), "closing", 400},
		{`"other.com"`, rule("api.x.com", "v"), "allowOut", 400},
		{`"1.2.3.4"`, rule("api.x.com", "v"), "allowOut", 400},
		{`"api.y.com"`, rule("*.x.com", "v"), "allowOut", 400},
		{`"api.x.com"`, rule("*.x.com", "v"), "", 201}, // overlaps: applies where allowed
		{`"api.x.com"`, rule("1.2.3.4", "v"), "IPs", 400},
		{`"api.x.com"`, `{"api.x.com":[{"transform":{"headers":{"Host":"evil.com"}}}]}`, "Host", 400},
		{`"api.x.com"`, rule("api.x.com", `a\r\nX-Evil: 1`), "CR", 400},
		{`"*.x.com"`, rule("api.x.com", "Bearer ${e2b.secrets.key}"), "", 201},
		{`"*.x.com"`, rule("*.x.com", "Bearer ${e2b.secrets.KEY}"), "", 201},
	} {
		code, b := create(c.allow, c.rules)
		if code != c.code || !strings.Contains(b, c.want) || strings.Contains(b, apiSecretValue) {
			t.Errorf("allow %s rules %s = %d %s, want %d %q", c.allow, c.rules, code, b, c.code, c.want)
		}
	}
	code, b := create(`"api.x.com"`, rule("API.X.com", "Bearer ${e2b.secrets.key}"))
	var sb struct{ SandboxID string }
	if json.Unmarshal([]byte(b), &sb); code != 201 {
		t.Fatal(code, b)
	}
	_, _, info := raw(t, srv, "GET", "/sandboxes/"+sb.SandboxID, "")
	if !strings.Contains(info, `"api.x.com":[{"transform"`) || !strings.Contains(info, `${e2b.secrets.key}`) || strings.Contains(info, apiSecretValue) {
		t.Errorf("getInfo: %s", info)
	}
	put := func(body string) int {
		code, _, _ := raw(t, srv, "PUT", "/sandboxes/"+sb.SandboxID+"/network", body)
		return code
	}
	if c := put(`{"allowOut":["api.x.com"],"rules":` + rule("api.x.com", "${e2b.secrets.nope}") + `}`); c != 400 {
		t.Errorf("update with a missing secret = %d", c)
	}
	if c := put(`{"allowOut":["api.y.com"],"rules":` + rule("api.y.com", "T ${e2b.secrets.key}") + `}`); c != 204 {
		t.Errorf("update = %d", c)
	}
	if _, _, info = raw(t, srv, "GET", "/sandboxes/"+sb.SandboxID, ""); !strings.Contains(info, `api.y.com`) {
		t.Errorf("getInfo after update: %s", info)
	}
}
