// Package envdsig computes the signature of envd file URLs, as the E2B SDK
// does (src/sandbox/signature.ts), for the agent that verifies it and the
// daemon's proxy that routes signed URLs to their sandbox.
package envdsig

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
)

// Sign returns "v1_" + base64(sha256("path:op:user:token[:expiry]")) without
// padding. op is "read" or "write"; expiry (Unix seconds) is left out when 0.
// The token is the sandbox's access token, so a signature is bound to one
// sandbox, one path, one operation, one user and one expiry.
func Sign(path, op, user, token string, expiry int64) string {
	parts := []string{path, op, user, token}
	if expiry > 0 {
		parts = append(parts, strconv.FormatInt(expiry, 10))
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, ":")))
	return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// Equal compares two signatures in constant time.
func Equal(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// ParseExpiry parses a signature_expiration query value: "" is no expiry
// (0); anything but a positive integer is invalid.
func ParseExpiry(s string) (int64, bool) {
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}
