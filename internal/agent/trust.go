package agent

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Where the daemon's egress interception CA is installed (under
// Config.TrustRoot, "/" in a sandbox) and the env vars that point TLS
// stacks at it: OpenSSL (Python ssl, curl, httpx) and Go read
// SSL_CERT_FILE, Python requests REQUESTS_CA_BUNDLE (instead of certifi),
// Node NODE_EXTRA_CA_CERTS (added to its own roots).
const (
	trustCAFile = "usr/local/share/ca-certificates/sbx-egress-ca.crt"
	trustBundle = "etc/ssl/certs/ca-certificates.crt"
)

// trustEnv are the default env vars a sandbox gets with the CA, unless
// /init's own env sets them.
func trustEnv() map[string]string {
	b, ca := "/"+trustBundle, "/"+trustCAFile
	return map[string]string{"SSL_CERT_FILE": b, "REQUESTS_CA_BUNDLE": b, "NODE_EXTRA_CA_CERTS": ca}
}

// trustMemo remembers the CA certificate this agent process installed, so
// a second /init with the same CA (a pooled sandbox's claim after its
// pre-init, a resume) touches no file: under gVisor reading the system
// bundle goes through the gofer on the claim's critical path. A tenant who
// removes the CA afterwards only breaks their own HTTPS to names with
// network.rules (closed, not open); a fresh agent process (a files-only
// resume) has an empty memo and installs again.
type trustMemo struct {
	mu   sync.Mutex
	root string
	pem  string
}

// install is installTrust unless root already has certPEM from this process.
func (t *trustMemo) install(root, certPEM string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pem == certPEM && t.root == root {
		return nil
	}
	if err := installTrust(root, certPEM); err != nil {
		return err
	}
	t.root, t.pem = root, certPEM
	return nil
}

// installTrust puts the CA certificate certPEM into the system bundle
// (appended once; the bundle is made if the template has none) and its own
// file, under root. It is idempotent (/init runs again on resume). The CA
// only matters for names the sandbox's own network rules cover: the daemon
// terminates TLS for nothing else.
func installTrust(root, certPEM string) error {
	blk, _ := pem.Decode([]byte(certPEM))
	if blk == nil || blk.Type != "CERTIFICATE" {
		return errors.New("egressCA is not a PEM certificate")
	}
	c := pem.EncodeToMemory(blk)
	if err := writeIfChanged(filepath.Join(root, trustCAFile), c); err != nil {
		return err
	}
	bundle := filepath.Join(root, trustBundle)
	old, err := os.ReadFile(bundle)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read CA bundle: %w", err)
	}
	if containsPEM(old, c) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(bundle), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(bundle, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open CA bundle: %w", err)
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		c = append([]byte("\n"), c...)
	}
	_, err = f.Write(c)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeIfChanged(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// containsPEM reports whether bundle holds the PEM block c (as
// bytes.Contains). It looks for a short piece of c's base64 body first, which
// bytes.Index finds with vector instructions, and compares the whole block
// only where that piece is: bytes.Contains with the whole block (a needle
// past bytealg.MaxLen) falls back to Rabin-Karp, ≈ 0.35 ms over a system
// bundle of 200 KB, on every cold create.
func containsPEM(bundle, c []byte) bool {
	const probe = 31 // ≤ bytealg.MaxLen on every amd64
	end := bytes.LastIndex(c, []byte("\n-----END "))
	if end < probe {
		return bytes.Contains(bundle, c)
	}
	at := end - probe // the piece ends where the body does: the signature's bytes
	needle := c[at:end]
	for off := 0; ; {
		i := bytes.Index(bundle[off:], needle)
		if i < 0 {
			return false
		}
		start := off + i - at
		if start >= 0 && start+len(c) <= len(bundle) && bytes.Equal(bundle[start:start+len(c)], c) {
			return true
		}
		off += i + 1
	}
}
