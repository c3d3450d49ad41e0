package guard

import (
	"bytes"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
)

func TestParseClientHelloFromCryptoTLS(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		want string
		err  error
	}{
		{"tls13", &tls.Config{ServerName: "example.com"}, "example.com", nil},
		{"tls12 only", &tls.Config{ServerName: "a.b.example.com", MaxVersion: tls.VersionTLS12}, "a.b.example.com", nil},
		{"alpn", &tls.Config{ServerName: "api.example.com", NextProtos: []string{"h2", "http/1.1"}}, "api.example.com", nil},
		{"upper case", &tls.Config{ServerName: "Example.COM"}, "example.com", nil},
		{"no sni", &tls.Config{InsecureSkipVerify: true}, "", ErrNoName},
		{"ip literal (no sni sent)", &tls.Config{ServerName: "93.184.216.34"}, "", ErrNoName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hello := clientHello(t, tc.cfg)
			for _, frag := range []int{1 << 14, 512, 7, 1} {
				data := refragment(t, hello, frag)
				got, err := ParseClientHello(append(data, "trailing bytes"...))
				if got != tc.want || !errors.Is(err, tc.err) {
					t.Fatalf("fragments of %d: got %q, %v; want %q, %v", frag, got, err, tc.want, tc.err)
				}
				for i := range data { // every strict prefix is incomplete
					if _, err := ParseClientHello(data[:i]); !errors.Is(err, ErrNeedMore) {
						t.Fatalf("fragments of %d, prefix %d/%d: %v, want ErrNeedMore", frag, i, len(data), err)
					}
				}
			}
		})
	}
}

func TestParseClientHelloCrafted(t *testing.T) {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63)
	record := func(typ byte, n int) []byte { return []byte{typ, 3, 1, byte(n >> 8), byte(n)} }
	for _, tc := range []struct {
		name string
		data []byte
		want string
		err  error
	}{
		{"minimal", helloWith(sniExt("example.com")), "example.com", nil},
		{"long name", helloWith(sniExt(long)), long, nil},
		{"trailing dot", helloWith(sniExt("example.com.")), "example.com", nil},
		{"with other extensions", helloWith(ext(10, []byte{0, 2, 0, 29}), sniExt("x.example.com"), ext(43, []byte{2, 3, 4})), "x.example.com", nil},
		{"no extensions", helloWith(), "", ErrNoName},
		{"empty name", helloWith(sniExt("")), "", ErrNoName},
		{"ip literal", helloWith(sniExt("10.0.0.1")), "", ErrNoName},
		{"two host names", helloWith(sniExt("a.com", "b.com")), "", ErrMalformed},
		{"duplicate sni extension", helloWith(sniExt("a.com"), sniExt("b.com")), "", ErrMalformed},
		{"duplicate other extension", helloWith(ext(10, nil), ext(10, nil), sniExt("a.com")), "", ErrMalformed},
		{"bad characters", helloWith(sniExt("evil.com\x00.example.com")), "", ErrMalformed},
		{"space", helloWith(sniExt("a b.com")), "", ErrMalformed},
		{"sni list overruns", helloWith(ext(extServerName, []byte{0, 9, 0, 0, 3, 'a'})), "", ErrMalformed},
		{"extension overruns", helloWith([]byte{0, 0, 0, 50, 1}), "", ErrMalformed},
		{"http", []byte("GET / HTTP/1.1\r\n"), "", ErrNotTLS},
		{"garbage", []byte{0x16, 9, 9, 0, 1, 0}, "", ErrNotTLS},
		{"alert record", append(record(0x15, 2), 2, 40), "", ErrNotTLS},
		{"empty record", record(typeHandshake, 0), "", ErrMalformed},
		{"oversized record", record(typeHandshake, maxRecordPayload+1), "", ErrMalformed},
		{"oversized hello", append(record(typeHandshake, 4), typeClientHello, 2, 0, 0), "", ErrMalformed},
		{"server hello", append(record(typeHandshake, 4), 2, 0, 0, 0), "", ErrMalformed},
		{"hello body truncated", append(record(typeHandshake, 6), typeClientHello, 0, 0, 2, 3, 3), "", ErrMalformed},
		{"header only", record(typeHandshake, 100), "", ErrNeedMore},
		{"empty", nil, "", ErrNeedMore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseClientHello(tc.data)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("got %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// A non-handshake record in the middle of a fragmented hello is refused.
func TestParseClientHelloInterleavedRecord(t *testing.T) {
	data := refragment(t, helloWith(sniExt("example.com")), 10)
	bad := bytes.Clone(data)
	bad[15] = 0x17 // second record: application data
	if _, err := ParseClientHello(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, want ErrMalformed", err)
	}
}
