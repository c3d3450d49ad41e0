package socks

import (
	"bytes"
	"io"
	"testing"
)

// rw is a proxy that answers with fixed bytes and swallows what it is sent.
type rw struct{ r io.Reader }

func (p rw) Read(b []byte) (int, error) { return p.r.Read(b) }
func (rw) Write(b []byte) (int, error)  { return len(b), nil }

// FuzzHandshake: whatever a proxy (the tenant's: untrusted) answers, the
// client neither panics nor reads more than a handshake can hold.
func FuzzHandshake(f *testing.F) {
	f.Add([]byte{5, 0, 5, 0, 0, 1, 1, 2, 3, 4, 0, 80}, true)
	f.Add([]byte{5, 2, 1, 0, 5, 0, 0, 3, 3, 'a', 'b', 'c', 0, 80}, true)
	f.Add([]byte{5, 0, 5, 0, 0, 4}, false)
	f.Add([]byte{5, 0xff}, false)
	f.Fuzz(func(t *testing.T, answer []byte, withAuth bool) {
		var auth *Auth
		if withAuth {
			auth = &Auth{Username: "u", Password: "p"}
		}
		r := bytes.NewReader(answer)
		err := Handshake(rw{r}, auth, "example.test", 443)
		if read := len(answer) - r.Len(); read > 2+2+4+1+255+2 {
			t.Fatalf("read %d bytes of a handshake", read)
		}
		if err == nil && len(answer) < 2+4+1+2 { // the shortest: a zero-length bound name
			t.Fatalf("a %d-byte answer was taken for a handshake", len(answer))
		}
	})
}
