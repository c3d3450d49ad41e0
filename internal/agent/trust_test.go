package agent

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const testCA = `-----BEGIN CERTIFICATE-----
MIIBdzCCAR2gAwIBAgIBATAKBggqhkjOPQQDAjAUMRIwEAYDVQQDEwlzYnggdGVz
dDAeFw0yNjAxMDEwMDAwMDBaFw0zNjAxMDEwMDAwMDBaMBQxEjAQBgNVBAMTCXNi
-----END CERTIFICATE-----
`

// TestInstallTrust: the CA is appended to an existing bundle once (also
// when /init runs again), made when the template has none, and garbage is
// refused.
func TestInstallTrust(t *testing.T) {
	for _, existing := range []string{"OLD ROOTS\n", "NO NEWLINE", ""} {
		root := t.TempDir()
		bundle := filepath.Join(root, trustBundle)
		if existing != "" {
			_ = os.MkdirAll(filepath.Dir(bundle), 0o755)
			_ = os.WriteFile(bundle, []byte(existing), 0o644)
		}
		for range 2 {
			if err := installTrust(root, testCA); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := os.ReadFile(bundle)
		if !strings.HasPrefix(string(b), existing) || strings.Count(string(b), "BEGIN CERTIFICATE") != 1 || !strings.HasSuffix(string(b), "-----END CERTIFICATE-----\n") {
			t.Errorf("bundle after %q:\n%s", existing, b)
		}
		if c, _ := os.ReadFile(filepath.Join(root, trustCAFile)); string(c) != testCA {
			t.Errorf("own file: %q", c)
		}
	}
	if err := installTrust(t.TempDir(), "not pem"); err == nil {
		t.Error("garbage accepted")
	}
}

// TestInitTrust: /init with egressCA installs it and adds the env
// defaults without overriding /init's own; a trust store that cannot be
// written does not fail /init.
func TestInitTrust(t *testing.T) {
	for _, writable := range []bool{true, false} {
		root := t.TempDir()
		if !writable {
			_ = os.WriteFile(filepath.Join(root, "etc"), nil, 0o644) // a file where the dir should be
		}
		s, err := NewServer(Config{TrustRoot: root})
		if err != nil {
			t.Fatal(err)
		}
		body := `{"envVars": {"SSL_CERT_FILE": "/mine.pem"}, "egressCA": ` + strconv.Quote(testCA) + `}`
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/init", strings.NewReader(body)))
		envs := s.state.Envs()
		if rec.Code != 204 || envs["SSL_CERT_FILE"] != "/mine.pem" {
			t.Fatalf("writable=%v: %d %v", writable, rec.Code, envs)
		}
		if got := envs["NODE_EXTRA_CA_CERTS"] != ""; got != writable {
			t.Errorf("writable=%v: env defaults %v", writable, envs)
		}
	}
}

// TestInitTrustPreInit: the daemon's pooling pre-init (egressCA only)
// installs the CA and sets no token; the claim's /init (token, env, same
// CA) then gets the env defaults again without touching the trust store
// (a bundle removed in between stays removed: no file access).
func TestInitTrustPreInit(t *testing.T) {
	root := t.TempDir()
	s, err := NewServer(Config{TrustRoot: root, InitToken: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	post := func(body string) {
		t.Helper()
		req := httptest.NewRequest("POST", "/init", strings.NewReader(body))
		req.Header.Set("X-Sbx-Init-Token", "secret")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 204 {
			t.Fatalf("/init %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	post(`{"egressCA": ` + strconv.Quote(testCA) + `}`)
	bundle := filepath.Join(root, trustBundle)
	if _, err := os.Stat(bundle); err != nil || s.state.Token() != "" {
		t.Fatalf("pre-init: bundle %v, token %q", err, s.state.Token())
	}
	if err := os.Remove(bundle); err != nil {
		t.Fatal(err)
	}
	post(`{"accessToken": "tok", "envVars": {"A": "1"}, "egressCA": ` + strconv.Quote(testCA) + `}`)
	envs := s.state.Envs()
	if s.state.Token() != "tok" || envs["A"] != "1" || envs["SSL_CERT_FILE"] == "" {
		t.Fatalf("claim init: token %q envs %v", s.state.Token(), envs)
	}
	if _, err := os.Stat(bundle); !os.IsNotExist(err) {
		t.Errorf("claim init touched the trust store: %v", err)
	}
}
