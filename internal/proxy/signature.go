package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// Signature computes the envd file URL signature the E2B SDK produces
// (src/sandbox/signature.ts): "v1_" + base64(sha256("path:op:user:token[:exp]"))
// without padding. op is "read" or "write"; exp is "" when the URL has none.
func Signature(path, op, user, token, exp string) string {
	s := path + ":" + op + ":" + user + ":" + token
	if exp != "" {
		s += ":" + exp
	}
	sum := sha256.Sum256([]byte(s))
	return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// signatureMatches compares in constant time.
func signatureMatches(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
