package guard

import (
	"errors"
	"testing"
)

func TestParseHTTPHost(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
		err              error
	}{
		{"curl", "GET / HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n", "example.com", nil},
		{"port and case", "POST /x?y=1 HTTP/1.1\r\nhOsT:  API.Example.com:8080 \r\n\r\nbody", "api.example.com", nil},
		{"http/1.0", "HEAD / HTTP/1.0\r\nHost: a.example.com\r\n\r\n", "a.example.com", nil},
		{"options *", "OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n", "example.com", nil},
		{"trailing dot", "GET / HTTP/1.1\r\nHost: example.com.\r\n\r\n", "example.com", nil},
		{"incomplete headers", "GET / HTTP/1.1\r\nHost: example.com\r\n", "", ErrNeedMore},
		{"incomplete line", "GET /index.ht", "", ErrNeedMore},
		{"incomplete method", "DELE", "", ErrNeedMore},
		{"empty", "", "", ErrNeedMore},
		{"no host", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", "", ErrNoName},
		{"empty host", "GET / HTTP/1.1\r\nHost: \r\n\r\n", "", ErrNoName},
		{"ip host", "GET / HTTP/1.1\r\nHost: 93.184.216.34\r\n\r\n", "", ErrNoName},
		{"ipv6 host", "GET / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n", "", ErrNoName},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a.com\r\nHost: b.com\r\n\r\n", "", ErrMalformed},
		{"absolute form", "GET http://evil.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", "", ErrMalformed},
		{"connect", "CONNECT evil.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n", "", ErrMalformed},
		{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "", ErrMalformed},
		{"folded header", "GET / HTTP/1.1\r\nX: a\r\n b\r\nHost: example.com\r\n\r\n", "", ErrMalformed},
		{"space before colon", "GET / HTTP/1.1\r\nHost : evil.com\r\nHost: example.com\r\n\r\n", "", ErrMalformed},
		{"bad port", "GET / HTTP/1.1\r\nHost: example.com:x\r\n\r\n", "", ErrMalformed},
		{"userinfo", "GET / HTTP/1.1\r\nHost: example.com@evil.com\r\n\r\n", "", ErrMalformed},
		{"bare LF request line", "GET / HTTP/1.1\nHost: example.com\n\n", "", ErrMalformed},
		{"lower-case method", "get / HTTP/1.1\r\n", "", ErrMalformed},
		{"junk", "\x00\x01\x02\x03", "", ErrMalformed},
		{"bare LF in a header", "GET / HTTP/1.1\r\nX: a\nHost: evil.com\r\nHost: example.com\r\n\r\n", "", ErrMalformed},
		{"ssh banner", "SSH-2.0-OpenSSH_9.2\r\n", "", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHTTPHost([]byte(tc.data))
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("got %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}
