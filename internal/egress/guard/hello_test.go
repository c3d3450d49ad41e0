package guard

import (
	"crypto/tls"
	"errors"
	"net"
	"testing"
)

// clientHello returns the first flight a crypto/tls client sends with cfg:
// its ClientHello, in TLS records.
func clientHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	cli, srv := net.Pipe()
	go func() {
		_ = tls.Client(cli, cfg).Handshake()
		cli.Close()
	}()
	defer srv.Close()
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, err := srv.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if _, perr := ParseClientHello(buf); !errors.Is(perr, ErrNeedMore) {
			return buf
		}
		if err != nil {
			t.Fatalf("reading the ClientHello: %v (have %d bytes)", err, len(buf))
		}
	}
}

// refragment splits the handshake bytes of records into records of at most
// size bytes each.
func refragment(t testing.TB, records []byte, size int) []byte {
	t.Helper()
	var payload []byte
	for len(records) > 0 {
		n := int(records[3])<<8 | int(records[4])
		payload = append(payload, records[5:5+n]...)
		records = records[5+n:]
	}
	var out []byte
	for len(payload) > 0 {
		n := min(size, len(payload))
		out = append(out, typeHandshake, 3, 1, byte(n>>8), byte(n))
		out = append(out, payload[:n]...)
		payload = payload[n:]
	}
	return out
}

// helloWith builds a minimal ClientHello record carrying exts (raw
// extension bytes: type, length, body each).
func helloWith(exts ...[]byte) []byte {
	var body []byte
	body = append(body, 3, 3)
	body = append(body, make([]byte, 32)...) // random
	body = append(body, 0)                   // session id
	body = append(body, 0, 2, 0x13, 0x01)    // one cipher suite
	body = append(body, 1, 0)                // null compression
	var all []byte
	for _, e := range exts {
		all = append(all, e...)
	}
	body = append(body, byte(len(all)>>8), byte(len(all)))
	body = append(body, all...)
	msg := append([]byte{typeClientHello, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	return append([]byte{typeHandshake, 3, 1, byte(len(msg) >> 8), byte(len(msg))}, msg...)
}

// ext builds one extension.
func ext(typ uint16, body []byte) []byte {
	return append([]byte{byte(typ >> 8), byte(typ), byte(len(body) >> 8), byte(len(body))}, body...)
}

// sniExt builds a server_name extension with one host_name per name.
func sniExt(names ...string) []byte {
	var list []byte
	for _, n := range names {
		list = append(list, 0, byte(len(n)>>8), byte(len(n)))
		list = append(list, n...)
	}
	return ext(extServerName, append([]byte{byte(len(list) >> 8), byte(len(list))}, list...))
}
