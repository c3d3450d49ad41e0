package guard

import (
	"crypto/tls"
	"errors"
	"testing"
)

// FuzzParseClientHello feeds the same bytes to both name parsers the Guard
// uses. Neither may panic; a name either returns is a valid lower-case DNS
// name and never an IP literal; an error is one of the documented kinds.
func FuzzParseClientHello(f *testing.F) {
	f.Add(clientHello(f, &tls.Config{ServerName: "example.com"}))
	f.Add(refragment(f, clientHello(f, &tls.Config{ServerName: "a.example.com", MaxVersion: tls.VersionTLS12}), 9))
	f.Add(helloWith(sniExt("a.com", "b.com")))
	f.Add(helloWith(ext(10, nil), sniExt("x.example.com")))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: example.com:80\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"))
	f.Add([]byte{0x16, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) (string, error){ParseClientHello, ParseHTTPHost} {
			name, err := parse(data)
			if err != nil {
				if name != "" {
					t.Fatalf("name %q with error %v", name, err)
				}
				if !errors.Is(err, ErrNeedMore) && !errors.Is(err, ErrNotTLS) &&
					!errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNoName) {
					t.Fatalf("undocumented error %v", err)
				}
				continue
			}
			if checked, err := checkHostName(name); err != nil || checked != name {
				t.Fatalf("returned name %q is not a clean host name (%v)", name, err)
			}
		}
	})
}
