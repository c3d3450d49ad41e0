package guard

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Errors of the ClientHello and Host parsers. ErrNeedMore means the bytes
// so far are a valid prefix: read more and parse again.
var (
	ErrNeedMore  = errors.New("incomplete")
	ErrNotTLS    = errors.New("not a TLS handshake")
	ErrMalformed = errors.New("malformed")
	ErrNoName    = errors.New("no server name")
)

const (
	recordHeaderLen  = 5
	maxRecordPayload = 1<<14 + 2048 // RFC 8446 5.2: TLSCiphertext bound
	typeHandshake    = 0x16
	typeClientHello  = 1
	extServerName    = 0
	maxHelloLen      = 1 << 16 // a ClientHello bigger than this is refused
)

// ParseClientHello returns the SNI host name of the TLS ClientHello at the
// start of data, which may span several TLS records. It decrypts nothing and
// only reads: bytes after the ClientHello are ignored. Errors: ErrNeedMore
// (valid so far, incomplete), ErrNotTLS, ErrMalformed (wrapped, with the
// cause) and ErrNoName (a well-formed hello without a host_name, or whose
// name is an IP literal). A returned name is a valid lower-case DNS name.
func ParseClientHello(data []byte) (string, error) {
	msg, err := handshakeMessage(data)
	if err != nil {
		return "", err
	}
	return helloServerName(msg)
}

// handshakeMessage reassembles the first handshake message (a ClientHello)
// from the TLS records at the start of data.
func handshakeMessage(data []byte) ([]byte, error) {
	var msg []byte
	for first := true; ; first = false {
		if len(data) < recordHeaderLen {
			return nil, ErrNeedMore
		}
		n := int(data[3])<<8 | int(data[4])
		if err := checkRecordHeader(data, n, first); err != nil {
			return nil, err
		}
		if len(data) < recordHeaderLen+n {
			return nil, ErrNeedMore
		}
		msg = append(msg, data[recordHeaderLen:recordHeaderLen+n]...)
		data = data[recordHeaderLen+n:]
		if len(msg) < 4 {
			continue
		}
		if msg[0] != typeClientHello {
			return nil, fmt.Errorf("%w: handshake type %d, want ClientHello", ErrMalformed, msg[0])
		}
		size := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if size > maxHelloLen {
			return nil, fmt.Errorf("%w: ClientHello of %d bytes", ErrMalformed, size)
		}
		if len(msg) >= 4+size {
			return msg[4 : 4+size], nil
		}
	}
}

func checkRecordHeader(h []byte, n int, first bool) error {
	if h[0] != typeHandshake {
		if first {
			return ErrNotTLS
		}
		return fmt.Errorf("%w: record type %d inside the ClientHello", ErrMalformed, h[0])
	}
	if h[1] != 3 || h[2] > 4 {
		if first {
			return ErrNotTLS
		}
		return fmt.Errorf("%w: record version %d.%d", ErrMalformed, h[1], h[2])
	}
	if n == 0 || n > maxRecordPayload {
		return fmt.Errorf("%w: record length %d", ErrMalformed, n)
	}
	return nil
}

// helloServerName walks a ClientHello body (RFC 8446 4.1.2) to its
// server_name extension (RFC 6066 3).
func helloServerName(b []byte) (string, error) {
	r := reader{b: b}
	r.skip(2 + 32)       // legacy_version, random
	r.vector(1, 32)      // legacy_session_id
	r.vector(2, 1<<16-2) // cipher_suites
	r.vector(1, 255)     // legacy_compression_methods
	if r.err == nil && len(r.b) == 0 {
		return "", ErrNoName // no extensions at all (TLS 1.0 style)
	}
	exts := reader{b: r.vector(2, 1<<16-1)}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the extensions", ErrMalformed, len(r.b))
	}
	if r.err != nil {
		return "", r.err
	}
	return extensionsServerName(&exts)
}

// extensionsServerName finds server_name among the extensions, refusing
// duplicate extensions (a parser/server disagreement is an attack surface).
func extensionsServerName(exts *reader) (string, error) {
	seen := make(map[uint16]bool)
	var sni []byte
	found := false
	for exts.err == nil && len(exts.b) > 0 {
		typ := exts.uint16()
		body := exts.vector(2, 1<<16-1)
		if exts.err != nil {
			break
		}
		if seen[typ] {
			return "", fmt.Errorf("%w: duplicate extension %d", ErrMalformed, typ)
		}
		seen[typ] = true
		if typ == extServerName {
			sni, found = body, true
		}
	}
	if exts.err != nil {
		return "", exts.err
	}
	if !found {
		return "", ErrNoName
	}
	return serverNameList(sni)
}

// serverNameList returns the one host_name of a ServerNameList.
func serverNameList(b []byte) (string, error) {
	outer := reader{b: b}
	list := reader{b: outer.vector(2, 1<<16-1)}
	if outer.err == nil && len(outer.b) != 0 {
		return "", fmt.Errorf("%w: bytes after the server name list", ErrMalformed)
	}
	var name string
	for outer.err == nil && list.err == nil && len(list.b) > 0 {
		typ := list.byte()
		v := list.vector(2, 1<<16-1)
		if list.err != nil || typ != 0 {
			continue // other name types are ignored (none are defined)
		}
		if name != "" {
			return "", fmt.Errorf("%w: two host names", ErrMalformed)
		}
		name = string(v)
	}
	if err := errors.Join(outer.err, list.err); err != nil {
		return "", err
	}
	return checkHostName(name)
}

// checkHostName validates a name taken from SNI or Host: lower-cased, one
// trailing dot allowed and dropped; IP literals and empty names are no name.
func checkHostName(name string) (string, error) {
	n := egress.NormName(name)
	if n == "" {
		return "", ErrNoName
	}
	if _, err := netip.ParseAddr(n); err == nil {
		return "", fmt.Errorf("%w: IP literal %q", ErrNoName, n)
	}
	if !egress.ValidName(n) {
		return "", fmt.Errorf("%w: invalid host name %q", ErrMalformed, name)
	}
	return n, nil
}
