package socks

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
)

// Protocol constants (RFC 1928, RFC 1929).
const (
	version5       = 0x05
	methodNoAuth   = 0x00
	methodUserPass = 0x02
	methodNone     = 0xff
	authVersion    = 0x01
	cmdConnect     = 0x01
	atypIPv4       = 0x01
	atypDomain     = 0x03
	atypIPv6       = 0x04
)

// Errors of a handshake; a refused CONNECT is a *ReplyError.
var (
	// ErrProtocol: the peer does not speak SOCKS5 (or broke it).
	ErrProtocol = errors.New("socks5: protocol error")
	// ErrNoMethod: the proxy accepts none of the offered auth methods.
	ErrNoMethod = errors.New("socks5: no acceptable authentication method")
	// ErrAuth: the proxy rejected the username/password.
	ErrAuth = errors.New("socks5: authentication failed")
)

// ReplyError is a CONNECT the proxy answered with a failure code.
type ReplyError struct{ Code byte }

var replyText = map[byte]string{
	1: "general failure", 2: "connection not allowed by ruleset", 3: "network unreachable",
	4: "host unreachable", 5: "connection refused", 6: "TTL expired",
	7: "command not supported", 8: "address type not supported",
}

func (e *ReplyError) Error() string {
	if t, ok := replyText[e.Code]; ok {
		return "socks5: proxy replied: " + t
	}
	return fmt.Sprintf("socks5: proxy replied: unknown code %d", e.Code)
}

// Auth is an RFC 1929 username and password; a nil *Auth offers no-auth only.
type Auth struct {
	Username string
	Password string
}

// Handshake negotiates auth on c, a connection to a SOCKS5 proxy, and
// asks it to CONNECT to host:port (host an IP literal, sent as such, or
// a DNS name, sent as ATYP domain for the proxy to resolve). On success c
// carries the tunnelled stream. The caller bounds it with a deadline on c.
func Handshake(c io.ReadWriter, auth *Auth, host string, port uint16) error {
	if err := negotiate(c, auth); err != nil {
		return err
	}
	req, err := connectRequest(host, port)
	if err != nil {
		return err
	}
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("socks5: send request: %w", err)
	}
	return readReply(c)
}

// negotiate offers no-auth, plus username/password with auth, and runs
// the sub-negotiation the proxy picks.
func negotiate(c io.ReadWriter, auth *Auth) error {
	greet := []byte{version5, 1, methodNoAuth}
	if auth != nil {
		greet = []byte{version5, 2, methodNoAuth, methodUserPass}
	}
	if _, err := c.Write(greet); err != nil {
		return fmt.Errorf("socks5: send greeting: %w", err)
	}
	var resp [2]byte
	if err := readFull(c, resp[:], "method selection"); err != nil {
		return err
	}
	switch {
	case resp[0] != version5:
		return fmt.Errorf("%w: version %d in method selection", ErrProtocol, resp[0])
	case resp[1] == methodNoAuth:
		return nil
	case resp[1] == methodUserPass && auth != nil:
		return userPass(c, auth)
	case resp[1] == methodNone:
		return ErrNoMethod
	default:
		return fmt.Errorf("%w: proxy chose method %d, which was not offered", ErrProtocol, resp[1])
	}
}

// userPass is RFC 1929's sub-negotiation.
func userPass(c io.ReadWriter, a *Auth) error {
	if len(a.Username) == 0 || len(a.Username) > 255 || len(a.Password) > 255 {
		return fmt.Errorf("%w: username must be 1-255 bytes, password at most 255", ErrAuth)
	}
	msg := make([]byte, 0, 3+len(a.Username)+len(a.Password))
	msg = append(msg, authVersion, byte(len(a.Username)))
	msg = append(msg, a.Username...)
	msg = append(msg, byte(len(a.Password)))
	msg = append(msg, a.Password...)
	if _, err := c.Write(msg); err != nil {
		return fmt.Errorf("socks5: send credentials: %w", err)
	}
	var resp [2]byte
	if err := readFull(c, resp[:], "authentication status"); err != nil {
		return err
	}
	if resp[0] != authVersion {
		return fmt.Errorf("%w: auth version %d", ErrProtocol, resp[0])
	}
	if resp[1] != 0 {
		return ErrAuth
	}
	return nil
}

// connectRequest encodes CONNECT host:port.
func connectRequest(host string, port uint16) ([]byte, error) {
	req := []byte{version5, cmdConnect, 0}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if ip.Is4() {
			req = append(req, atypIPv4)
		} else {
			req = append(req, atypIPv6)
		}
		req = append(req, ip.AsSlice()...)
	} else {
		if len(host) == 0 || len(host) > 255 {
			return nil, fmt.Errorf("socks5: host name must be 1-255 bytes, got %d", len(host))
		}
		req = append(req, atypDomain, byte(len(host)))
		req = append(req, host...)
	}
	return binary.BigEndian.AppendUint16(req, port), nil
}

// readReply reads the CONNECT reply, bound address included.
func readReply(c io.Reader) error {
	var h [4]byte
	if err := readFull(c, h[:], "reply"); err != nil {
		return err
	}
	if h[0] != version5 {
		return fmt.Errorf("%w: version %d in reply", ErrProtocol, h[0])
	}
	if h[1] != 0 {
		return &ReplyError{Code: h[1]}
	}
	var n int
	switch h[3] {
	case atypIPv4:
		n = 4
	case atypIPv6:
		n = 16
	case atypDomain:
		var l [1]byte
		if err := readFull(c, l[:], "reply address"); err != nil {
			return err
		}
		n = int(l[0])
	default:
		return fmt.Errorf("%w: address type %d in reply", ErrProtocol, h[3])
	}
	return readFull(c, make([]byte, n+2), "reply address")
}

// readFull reads len(b) bytes; a short read is ErrProtocol (the proxy
// closed mid-handshake), other failures are wrapped as they are.
func readFull(c io.Reader, b []byte, what string) error {
	_, err := io.ReadFull(c, b)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: connection closed during %s", ErrProtocol, what)
	default:
		return fmt.Errorf("socks5: read %s: %w", what, err)
	}
}
