package daemon

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCert writes a CA-signed certificate for names, valid from nb to na,
// and its key to dir; it returns their paths and the CA pool.
func testCert(t *testing.T, dir string, names []string, nb, na time.Time) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sbx test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	pool = x509.NewCertPool()
	pool.AddCert(caCert)
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), DNSNames: names, NotBefore: nb, NotAfter: na,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &k.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePEM(t, cert, "CERTIFICATE", der)
	writePEM(t, key, "EC PRIVATE KEY", kb)
	return cert, key, pool
}

func writePEM(t *testing.T, path, typ string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadTLS(t *testing.T) {
	now := time.Now()
	wildcard := []string{"*.sbx.test", "sbx.test"}
	tests := []struct {
		name   string
		names  []string
		domain string
		mangle func(cert, key string) tlsFlags
		errHas string // "" = loads
	}{
		{name: "wildcard", names: wildcard, domain: "sbx.test"},
		{name: "wildcard, domain with port", names: wildcard, domain: "sbx.test:8443"},
		{name: "no domain: not checked", names: []string{"other.test"}},
		{name: "wrong domain", names: []string{"*.other.test"}, domain: "sbx.test", errHas: "does not cover api.sbx.test"},
		{name: "api name only", names: []string{"api.sbx.test"}, domain: "sbx.test", errHas: "wildcard certificate for *.sbx.test"},
		{name: "key without cert", names: wildcard, mangle: func(_, key string) tlsFlags { return tlsFlags{key: key} }, errHas: "together"},
		{name: "missing cert file", names: wildcard, mangle: func(cert, key string) tlsFlags { return tlsFlags{cert: cert + ".nope", key: key} }, errHas: "no such file"},
		{name: "garbage cert", names: wildcard, mangle: func(cert, key string) tlsFlags {
			os.WriteFile(cert, []byte("not a certificate"), 0o600)
			return tlsFlags{cert: cert, key: key}
		}, errHas: "failed to find any PEM data"},
		{name: "key of another cert", names: wildcard, mangle: func(cert, key string) tlsFlags {
			other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			kb, _ := x509.MarshalECPrivateKey(other)
			writePEM(t, key, "EC PRIVATE KEY", kb)
			return tlsFlags{cert: cert, key: key}
		}, errHas: "private key does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, key, _ := testCert(t, t.TempDir(), tt.names, now.Add(-time.Hour), now.Add(time.Hour))
			f := tlsFlags{cert: cert, key: key}
			if tt.mangle != nil {
				f = tt.mangle(cert, key)
			}
			_, err := loadTLS(f, tt.domain, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if tt.errHas == "" && err != nil {
				t.Fatalf("loadTLS: %v", err)
			}
			if tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)) {
				t.Fatalf("loadTLS error %v, want one containing %q", err, tt.errHas)
			}
		})
	}
}

func TestLoadTLSExpiredWarns(t *testing.T) {
	now := time.Now()
	cert, key, _ := testCert(t, t.TempDir(), []string{"*.sbx.test"}, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	var logs strings.Builder
	if _, err := loadTLS(tlsFlags{cert: cert, key: key}, "sbx.test", slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "not valid now") {
		t.Errorf("no warning for an expired certificate: %q", logs.String())
	}
}

// TestListenServesHTTPS: --listen stays plain HTTP while --tls-listen serves
// the same handler over TLS (HTTP/1.1) for the domain's names.
func TestListenServesHTTPS(t *testing.T) {
	now := time.Now()
	cert, key, pool := testCert(t, t.TempDir(), []string{"*.sbx.test"}, now.Add(-time.Hour), now.Add(time.Hour))
	f := &Config{listen: "127.0.0.1:0", domain: "sbx.test", tls: tlsFlags{cert: cert, key: key, listen: "127.0.0.1:0"}}
	var err error
	if f.tlsConf, err = loadTLS(f.tls, f.domain, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto+" tls="+map[bool]string{true: "yes", false: "no"}[r.TLS != nil])
	})
	srvs, err := listen(f, h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		go s.srv.Serve(s.ln)
		defer s.srv.Shutdown(context.Background())
	}
	tlsAddr := srvs[1].ln.Addr().String()
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if strings.HasSuffix(addr, ".test:443") {
				addr = tlsAddr // the resolver a test would use
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	for url, want := range map[string]string{
		"https://api.sbx.test/":                          "HTTP/1.1 tls=yes",
		"https://8080-abcdefghij0123456789.sbx.test/x":   "HTTP/1.1 tls=yes",
		"http://" + srvs[0].ln.Addr().String() + "/heal": "HTTP/1.1 tls=no",
	} {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("%s: %q, want %q", url, b, want)
		}
	}
	if _, err := c.Get("https://api.other.test/"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a name outside the certificate: %v, want a certificate error", err)
	}
}
