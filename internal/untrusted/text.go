package untrusted

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text is s with invalid UTF-8 and every control character (C0, DEL, C1)
// not in keep replaced by repl: a tenant's words as a reader's terminal or
// log shows them, with no escape sequence (ESC, so no OSC 52 clipboard
// write or CSI repaint), CR, BEL or fake line break of the tenant's.
func Text(s, keep string, repl rune) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) && !strings.ContainsRune(keep, r) {
			return repl
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}

// Cut is s cut to at most n bytes on a rune boundary, and whether it was
// cut.
func Cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}
