package agent

import (
	"bytes"
	"encoding/pem"
	"math/rand/v2"
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

// TestContainsPEM: containsPEM agrees with bytes.Contains, also where the
// piece it looks for first occurs without the whole block around it.
func TestContainsPEM(t *testing.T) {
	bundle, ca := testBundle(140)
	piece := ca[bytes.LastIndex(ca, []byte("\n-----END "))-31:]
	decoy := append([]byte("XX"), piece...) // the piece without the block
	short := []byte("-----BEGIN X-----\nAA==\n-----END X-----\n")
	for _, c := range []struct {
		name         string
		bundle, cert []byte
	}{
		{"absent", bundle, ca},
		{"at the end", cat(bundle, ca), ca},
		{"at the start", cat(ca, bundle), ca},
		{"in the middle", cat(bundle, ca, bundle), ca},
		{"after a decoy", cat(decoy, bundle, ca), ca},
		{"decoy only", cat(bundle, decoy), ca},
		{"cut short", cat(bundle, ca[:len(ca)-1]), ca},
		{"empty bundle", nil, ca},
		{"short block, absent", bundle, short},
		{"short block, present", cat(bundle, short), short},
	} {
		if got, want := containsPEM(c.bundle, c.cert), bytes.Contains(c.bundle, c.cert); got != want {
			t.Errorf("%s: containsPEM = %v, bytes.Contains = %v", c.name, got, want)
		}
	}
}

// BenchmarkContainsPEM: the cold create's check of a system bundle of ≈
// 200 KB (140 certificates) that lacks the egress CA.
func BenchmarkContainsPEM(b *testing.B) {
	bundle, ca := testBundle(140)
	b.Run("containsPEM", func(b *testing.B) {
		for b.Loop() {
			containsPEM(bundle, ca)
		}
	})
	b.Run("bytes.Contains", func(b *testing.B) {
		for b.Loop() {
			bytes.Contains(bundle, ca)
		}
	})
}

// testBundle returns n PEM certificates of random bytes (≈ 1.5 KB each, as
// a system bundle's) and one more, not in it.
func testBundle(n int) (bundle, cert []byte) {
	rnd := rand.New(rand.NewPCG(1, 2))
	block := func() []byte {
		der := make([]byte, 1100)
		for i := range der {
			der[i] = byte(rnd.Uint32())
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	for range n {
		bundle = append(bundle, block()...)
	}
	return bundle, block()
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
