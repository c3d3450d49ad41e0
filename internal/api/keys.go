package api

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Keys holds the SHA-256 hashes of the accepted API keys; keys themselves are
// never stored. Valid compares in constant time.
type Keys struct {
	hashes [][sha256.Size]byte
}

// keyFile holds the hash of the generated key, one hex line.
const keyFile = "api-key.sha256"

// LoadKeys accepts envKey (if non-empty) and the key whose hash is stored in
// dataDir. If neither exists, it generates a key shaped like E2B's
// ("e2b_" + 40 hex chars), stores its hash, and returns it as generated so the
// caller can print it once.
func LoadKeys(dataDir, envKey string) (k *Keys, generated string, err error) {
	k = &Keys{}
	if envKey != "" {
		k.hashes = append(k.hashes, sha256.Sum256([]byte(envKey)))
	}
	path := filepath.Join(dataDir, keyFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		h, derr := hex.DecodeString(strings.TrimSpace(string(b)))
		if derr != nil || len(h) != sha256.Size {
			return nil, "", fmt.Errorf("corrupt %s: delete it to generate a new key", path)
		}
		k.hashes = append(k.hashes, [sha256.Size]byte(h))
		return k, "", nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, "", fmt.Errorf("read api key hash: %w", err)
	case envKey != "":
		return k, "", nil
	}
	generated = newKey()
	h := sha256.Sum256([]byte(generated))
	if err := writeFileAtomic(path, []byte(hex.EncodeToString(h[:])+"\n"), 0o600); err != nil {
		return nil, "", err
	}
	k.hashes = append(k.hashes, h)
	return k, generated, nil
}

// Valid reports whether key is accepted.
func (k *Keys) Valid(key string) bool {
	if key == "" {
		return false
	}
	h := sha256.Sum256([]byte(key))
	ok := 0
	for _, want := range k.hashes {
		ok |= subtle.ConstantTimeCompare(h[:], want[:])
	}
	return ok == 1
}

// KeyID names a key in logs: the first 12 hex chars of its SHA-256.
func KeyID(key string) string {
	h := sha256.Sum256([]byte(key))
	return "key_" + hex.EncodeToString(h[:6])
}

func newKey() string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return "e2b_" + hex.EncodeToString(b)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
