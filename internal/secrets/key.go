package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length of the sealing key: AES-256.
const KeySize = 32

// Sealer encrypts secret values with AES-256-GCM under a key that is not in
// the database (a key file or the environment). Each value gets a fresh
// random nonce; the additional data binds a sealed value to its owner and
// secret id, so a sealed value copied onto another record does not open.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a Sealer for a KeySize-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets key: %d bytes, want %d", len(key), KeySize)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: a}, nil
}

// Seal encrypts value bound to aad: nonce || ciphertext || tag.
func (s *Sealer) Seal(value, aad []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(value)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("secrets: crypto/rand: " + err.Error()) // never fails on Linux ≥ 3.17
	}
	return s.aead.Seal(nonce, nonce, value, aad)
}

// Open decrypts what Seal returned for the same aad. The error never holds
// any part of the value.
func (s *Sealer) Open(sealed, aad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, errors.New("sealed value too short")
	}
	v, err := s.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, errors.New("sealed value does not open with this key (wrong key or tampered record)")
	}
	return v, nil
}

// LoadKey returns the sealing key: from env (hex or base64 of KeySize
// bytes) when set, else from the file at path, which is made (0600, its
// directory 0700 when new) with a random key when missing; generated
// reports that. A key of the wrong size is an error naming where it came
// from, never its content.
func LoadKey(path, env string) (key []byte, generated bool, err error) {
	if env != "" {
		k, err := parseKey(env)
		if err != nil {
			return nil, false, fmt.Errorf("SBX_SECRETS_KEY: %w", err)
		}
		return k, false, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		k, err := parseKey(string(b))
		if err != nil {
			return nil, false, fmt.Errorf("secrets key file %s: %w", path, err)
		}
		return k, false, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, false, fmt.Errorf("read secrets key: %w", err)
	}
	return writeNewKey(path)
}

func writeNewKey(path string) ([]byte, bool, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("secrets key dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("create secrets key file: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(k) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, false, fmt.Errorf("write secrets key file: %w", err)
	}
	return k, true, nil
}

// parseKey reads KeySize bytes written as hex or standard base64.
func parseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if k, err := hex.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	return nil, fmt.Errorf("not %d bytes in hex or base64", KeySize)
}
