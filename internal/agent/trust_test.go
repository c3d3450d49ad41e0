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
