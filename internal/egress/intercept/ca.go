package intercept

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// File names of the CA in its directory.
const (
	CACertFile = "egress-ca.pem" // 0644: it is installed in every sandbox
	CAKeyFile  = "egress-ca.key" // 0600
)

// Validity of the certificates the CA mints.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 7 * 24 * time.Hour
	leafRenew    = 24 * time.Hour // a cached leaf closer than this to expiry is minted again
	maxLeaves    = 4096
)

// CA is the daemon's interception CA: sandboxes trust it, and the
// interceptor presents a leaf it signs for a rule's domain. Its key never
// leaves the host (0600 file beside the data, not in the database).
// Leaves share one key and are cached by name; mu guards the cache.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
	now    func() time.Time
}

// LoadCA reads the CA from dir, or makes one there (key 0600, dir 0700 when
// new) when neither file exists; generated reports that. One file without
// the other is an error (never silently replaced: sandboxes trust the old
// certificate).
func LoadCA(dir string) (ca *CA, generated bool, err error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	c, cerr := os.ReadFile(certPath)
	k, kerr := os.ReadFile(keyPath)
	switch {
	case cerr == nil && kerr == nil:
		ca, err = parseCA(c, k)
		if err != nil {
			return nil, false, fmt.Errorf("egress CA in %s: %w", dir, err)
		}
		return ca, false, nil
	case errors.Is(cerr, os.ErrNotExist) && errors.Is(kerr, os.ErrNotExist):
		ca, err = newCA(dir)
		return ca, err == nil, err
	}
	return nil, false, fmt.Errorf("egress CA in %s: need both %s and %s (cert: %v, key: %v)", dir, CACertFile, CAKeyFile, cerr, kerr)
}

func newCA(dir string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "sbx egress interception CA", Organization: []string{"sbx"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caValidity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := writeExcl(filepath.Join(dir, CAKeyFile), keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeExcl(filepath.Join(dir, CACertFile), certPEM, 0o644); err != nil {
		_ = os.Remove(filepath.Join(dir, CAKeyFile))
		return nil, err
	}
	return parseCA(certPEM, keyPEM)
}

func writeExcl(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the certificate is not a CA of this key")
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, certPEM: certPEM, key: key, leafKey: leafKey,
		leaves: map[string]*tls.Certificate{}, now: time.Now}, nil
}

// CertPEM is the CA certificate, PEM: what sandboxes install.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// Cert is the parsed CA certificate.
func (ca *CA) Cert() *x509.Certificate { return ca.cert }

// Leaf returns a server certificate for name (a DNS name), minted on first
// use and cached until a day before it expires.
func (ca *CA) Leaf(name string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	now := ca.now()
	if c, ok := ca.leaves[name]; ok && now.Add(leafRenew).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(leafValidity),
		DNSNames: []string{name}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("mint certificate for %q: %w", name, err)
	}
	leaf, _ := x509.ParseCertificate(der)
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: ca.leafKey, Leaf: leaf}
	if len(ca.leaves) >= maxLeaves {
		clear(ca.leaves)
	}
	ca.leaves[name] = c
	return c, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
