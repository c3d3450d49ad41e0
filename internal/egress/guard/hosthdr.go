package guard

import (
	"bytes"
	"fmt"
	"strings"
)

// maxMethodLen bounds the method token, so junk is refused early.
const maxMethodLen = 16

// ParseHTTPHost returns the Host of the HTTP/1.x request whose header block
// starts data. It is strict where laxness would let a server see another
// host than the guard: exactly one Host header, origin-form targets only (no
// absolute URLs, no CONNECT), CRLF line ends, no folded or malformed header
// lines. Errors: ErrNeedMore (valid so far, the blank line not yet seen),
// ErrMalformed (wrapped) and ErrNoName (no Host, or an IP literal). Bytes
// after the header block (a body, more requests) are ignored.
func ParseHTTPHost(data []byte) (string, error) {
	end := bytes.Index(data, []byte("\r\n\r\n"))
	if end < 0 {
		if err := checkPrefix(data); err != nil {
			return "", err
		}
		return "", ErrNeedMore
	}
	lines := strings.Split(string(data[:end]), "\r\n")
	if err := checkRequestLine(lines[0]); err != nil {
		return "", err
	}
	host, err := hostHeader(lines[1:])
	if err != nil {
		return "", err
	}
	return checkHostName(stripPort(host))
}

// checkPrefix refuses an incomplete request early when what is there
// cannot begin a request line.
func checkPrefix(data []byte) error {
	line, _, complete := bytes.Cut(data, []byte("\r\n"))
	if complete {
		return checkRequestLine(string(line))
	}
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("%w: bare LF", ErrMalformed)
	}
	method, _, spaced := bytes.Cut(line, []byte(" "))
	if (spaced || len(line) > 0) && !isMethod(string(method)) {
		return fmt.Errorf("%w: not an HTTP request line", ErrMalformed)
	}
	return nil
}

func checkRequestLine(line string) error {
	parts := strings.Split(line, " ")
	if len(parts) != 3 || !isMethod(parts[0]) {
		return fmt.Errorf("%w: bad request line", ErrMalformed)
	}
	if parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0" {
		return fmt.Errorf("%w: version %q", ErrMalformed, parts[2])
	}
	target := parts[1]
	if parts[0] == "CONNECT" || !strings.HasPrefix(target, "/") && !(parts[0] == "OPTIONS" && target == "*") {
		return fmt.Errorf("%w: only origin-form requests are forwarded", ErrMalformed)
	}
	return nil
}

func isMethod(m string) bool {
	if m == "" || len(m) > maxMethodLen {
		return false
	}
	for _, c := range []byte(m) {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// hostHeader returns the value of the one Host header among lines.
func hostHeader(lines []string) (string, error) {
	host, n := "", 0
	for _, l := range lines {
		name, value, ok := strings.Cut(l, ":")
		if !ok || !isToken(name) || strings.ContainsAny(value, "\r\n\x00") {
			return "", fmt.Errorf("%w: bad header line", ErrMalformed)
		}
		if strings.EqualFold(name, "Host") {
			host, n = strings.Trim(value, " \t"), n+1
		}
	}
	switch {
	case n > 1:
		return "", fmt.Errorf("%w: %d Host headers", ErrMalformed, n)
	case n == 0 || host == "":
		return "", ErrNoName
	}
	return host, nil
}

// isToken reports whether s is an RFC 9110 token (a header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// stripPort drops a ":port" suffix and the brackets of an IPv6 literal
// (which checkHostName then refuses as no name). An invalid port is left in,
// for checkHostName to refuse.
func stripPort(host string) string {
	if rest, ok := strings.CutPrefix(host, "["); ok {
		if addr, _, ok := strings.Cut(rest, "]"); ok {
			return addr
		}
		return host
	}
	h, port, ok := strings.Cut(host, ":")
	if !ok || port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
		return host
	}
	return h
}
