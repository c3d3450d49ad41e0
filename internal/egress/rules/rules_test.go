package rules

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRefuses(t *testing.T) {
	for _, raw := range []string{
		`[]`, `{"*": [{}]}`, `{"1.2.3.4": [{}]}`, `{"10.0.0.0/8": [{}]}`, `{"::1": [{}]}`,
		`{"bad..name": [{}]}`, `{"a.com": [{}], "A.COM": [{}]}`,
		`{"a.com": [{"transform": {"headers": {"Host": "b.com"}}}]}`,
		`{"a.com": [{"transform": {"headers": {"transfer-encoding": "x"}}}]}`,
		`{"a.com": [{"transform": {"headers": {"Connection": "close"}}}]}`,
		`{"a.com": [{"transform": {"headers": {"X-A\r\nEvil": "v"}}}]}`,
		`{"a.com": [{"transform": {"headers": {"X A": "v"}}}]}`,
		`{"a.com": [{"transform": {"headers": {"X-A": "v\r\nEvil: 1"}}}]}`,
		`{"a.com": [{"transform": {"headers": {"X-A": "v\nx"}}}]}`,
		`{"a.com": [{"transform": {"headers": {"X-A": "` + strings.Repeat("v", MaxValueBytes+1) + `"}}}]}`,
		`{"a.com": [{"transform": {"headers": {"X-A": "${e2b.secrets.unclosed"}}}]}`,
		`{"a.com": [{"transform": {"headers": {"X-A": "${e2b.secrets.}"}}}]}`,
		`{"a.com": "nope"}`,
	} {
		if _, err := Parse([]byte(raw)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%.80s) = %v, want ErrInvalid", raw, err)
		}
	}
}

func TestMatch(t *testing.T) {
	s, err := Parse([]byte(`{
		"api.example.com": [{"transform": {"headers": {"authorization": "exact"}}}],
		"*.example.com": [{"transform": {"headers": {"Authorization": "wild"}}}],
		"*.deep.example.com": [{"transform": {"headers": {"X-Deep": "1"}}},
		                       {"transform": {"headers": {"X-Deep": "2", "X-More": "m"}}}],
		"Other.ORG.": [{}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host, want string
		ok         bool
	}{
		{"api.example.com", "Authorization=exact", true},
		{"API.Example.Com.", "Authorization=exact", true},
		{"x.example.com", "Authorization=wild", true},
		{"a.b.example.com", "Authorization=wild", true},
		{"a.deep.example.com", "X-Deep=2,X-More=m", true}, // longest wildcard; later rule overrides; not merged
		{"deep.example.com", "Authorization=wild", true},
		{"example.com", "", false},      // a wildcard never matches the apex
		{"evil-example.com", "", false}, // label boundary
		{"api.example.com.evil.com", "", false},
		{"other.org", "", true},
		{"", "", false},
	} {
		hs, ok := s.Match(c.host)
		var got []string
		for _, h := range hs {
			got = append(got, h.Name+"="+h.Value)
		}
		if ok != c.ok || strings.Join(got, ",") != c.want {
			t.Errorf("Match(%q) = %v %v, want %q %v", c.host, got, ok, c.want, c.ok)
		}
	}
}

func TestSecretNames(t *testing.T) {
	s, err := Parse([]byte(`{"a.com": [{"transform": {"headers": {"A": "${e2b.secrets.K1} ${e2b.secrets.k2}"}}}],
		"*.b.com": [{"transform": {"headers": {"B": "x${e2b.secrets.k1}"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.SecretNames(), ","); got != "k1,k2" {
		t.Errorf("SecretNames = %s", got)
	}
	if e, _ := Parse(nil); !e.Empty() {
		t.Error("nil rules not empty")
	}
}
