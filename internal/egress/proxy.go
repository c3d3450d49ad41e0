package egress

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Proxy is a sandbox's egress proxy (E2B's network.egressProxy): a SOCKS5
// server at Address ("host:port", host a DNS name or an IP literal) that
// the sandbox's outbound TCP is tunnelled through, with RFC 1929
// credentials when Username is set. Password is a Secret: it never prints.
type Proxy struct {
	Address  string
	Username string
	Password Secret
}

// Secret is a credential. Every fmt verb, slog and JSON render it as
// "[redacted]"; Reveal returns the value for the one place that sends it.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// Format writes "[redacted]" for every verb (%v, %s, %q, %#v, %x ...).
func (Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// LogValue keeps the value out of slog records.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON keeps the value out of any JSON a Proxy is marshalled into.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// Max lengths of RFC 1929 credentials (one length byte each).
const maxCredLen = 255

// ParseProxy validates E2B's egressProxy fields: address "host:port" with
// a port 1-65535 and a host that is an IP literal or a DNS name; username
// and password at most 255 bytes; a password only with a username. Errors
// wrap ErrInvalid and never quote the password.
func ParseProxy(address, username, password string) (Proxy, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return Proxy{}, fmt.Errorf("%w: egressProxy.address %q must be host:port", ErrInvalid, address)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return Proxy{}, fmt.Errorf("%w: egressProxy.address %q: port must be 1-65535", ErrInvalid, address)
	}
	if _, err := netip.ParseAddr(host); err != nil && !ValidName(NormName(host)) {
		return Proxy{}, fmt.Errorf("%w: egressProxy.address %q: host is neither an IP nor a DNS name", ErrInvalid, address)
	}
	switch {
	case len(username) > maxCredLen || len(password) > maxCredLen:
		return Proxy{}, fmt.Errorf("%w: egressProxy username and password are at most %d bytes", ErrInvalid, maxCredLen)
	case password != "" && username == "":
		return Proxy{}, fmt.Errorf("%w: egressProxy.password needs a username", ErrInvalid)
	case strings.ContainsRune(username, 0) || strings.ContainsRune(password, 0):
		return Proxy{}, fmt.Errorf("%w: egressProxy credentials must not contain NUL bytes", ErrInvalid)
	}
	return Proxy{Address: address, Username: username, Password: Secret(password)}, nil
}
