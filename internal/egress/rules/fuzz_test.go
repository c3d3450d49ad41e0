package rules

import (
	"strings"
	"testing"
)

// FuzzParse: any input either fails or yields headers that are tokens
// with values free of CR, LF and NUL, never Host, and matching never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"api.example.com": [{"transform": {"headers": {"Authorization": "Bearer ${e2b.secrets.k}"}}}]}`,
		`{"*.a.b": [{}, {"transform": {"headers": {"X": "1", "x": "2"}}}]}`, `null`, `{}`, `{"*": []}`,
	} {
		f.Add(s, "api.example.com")
	}
	f.Fuzz(func(t *testing.T, raw, host string) {
		s, err := Parse([]byte(raw))
		if err != nil {
			return
		}
		hs, _ := s.Match(host)
		for _, h := range hs {
			if !validToken(h.Name) || forbidden[h.Name] || strings.ContainsAny(h.Value, "\r\n\x00") {
				t.Fatalf("accepted header %q: %q", h.Name, h.Value)
			}
		}
		_ = s.SecretNames()
	})
}
