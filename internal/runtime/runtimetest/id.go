package runtimetest

import "crypto/rand"

// newID is a fresh sandbox id of the daemon's shape (20 of [a-z0-9], like
// sandbox.NewID), made here so the runtime suite depends on nothing above
// package runtime.
func newID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)] // a slight bias is harmless for test ids
	}
	return string(b)
}
