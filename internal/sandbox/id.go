package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"math/big"
)

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// NewID returns a sandbox id: 20 characters of [a-z0-9] from crypto/rand,
// 36^20 ≈ 2^103 possibilities (E2B's shape; never contains '-', which the
// Host routing "<port>-<id>.<domain>" relies on).
func NewID() string {
	b := make([]byte, 20)
	max := big.NewInt(int64(len(idAlphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic("crypto/rand failed: " + err.Error())
		}
		b[i] = idAlphabet[n.Int64()]
	}
	return string(b)
}

// ValidID reports whether s has the shape of a sandbox id.
func ValidID(s string) bool {
	if len(s) != 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// newToken returns 32 random bytes, hex-encoded.
func newToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}
