package secrets

import (
	"errors"
	"fmt"
	"strings"
)

// Placeholder syntax: E2B's Secret.fill(name) is "${e2b.secrets.NAME}".
const (
	placeholderOpen  = "${e2b.secrets."
	placeholderClose = "}"
)

// ErrPlaceholder is returned (wrapped) for a malformed placeholder.
var ErrPlaceholder = errors.New("malformed secret placeholder")

// Names returns the secret names s refers to by placeholder, lower-cased
// as stored, in order of appearance (repeats kept). An unterminated
// placeholder or an invalid name is ErrPlaceholder.
func Names(s string) ([]string, error) {
	var out []string
	_, err := expand(s, func(name string) (string, error) {
		out = append(out, name)
		return "", nil
	})
	return out, err
}

// Expand replaces each placeholder of s with lookup(name). Text outside
// placeholders is kept byte for byte; "${" not followed by "e2b.secrets."
// is literal. Errors name the secret, never a value.
func Expand(s string, lookup func(name string) (string, error)) (string, error) {
	return expand(s, lookup)
}

func expand(s string, lookup func(string) (string, error)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, placeholderOpen)
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		rest := s[i+len(placeholderOpen):]
		j := strings.Index(rest, placeholderClose)
		if j < 0 {
			return "", fmt.Errorf("%w: %q has no closing '}'", ErrPlaceholder, truncate(s[i:], 40))
		}
		name := strings.ToLower(rest[:j])
		if err := ValidName(name); err != nil {
			return "", fmt.Errorf("%w: %w", ErrPlaceholder, err)
		}
		v, err := lookup(name)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		s = rest[j+len(placeholderClose):]
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
