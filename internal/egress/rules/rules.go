// Package rules parses and matches E2B's network.rules: per-domain
// transforms that set (or override) HTTP headers on a sandbox's egress
// requests to matching hosts. Header values may hold secret placeholders
// (${e2b.secrets.NAME}); they are kept as written here and resolved per
// request by the interceptor (package egress/intercept).
package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strings"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/secrets"
)

// ErrInvalid is returned (wrapped) for rules that cannot be accepted.
var ErrInvalid = errors.New("invalid network rules")

// Bounds on a rule set.
const (
	MaxDomains          = 64
	MaxHeadersPerDomain = 32
	MaxValueBytes       = 8 << 10
)

// Header is one header a matching request gets: Name canonical, Value as
// written (placeholders unresolved).
type Header struct{ Name, Value string }

// Set is a parsed rule set. The zero value matches nothing.
type Set struct {
	exact    map[string][]Header
	wildcard []wild // longest suffix first
}

type wild struct {
	dom     egress.Domain
	headers []Header
}

// wire is E2B's SandboxNetworkRule.
type wire struct {
	Transform *struct {
		Headers map[string]string `json:"headers"`
	} `json:"transform"`
}

// Parse reads E2B's rules object (domain → list of rules). Empty or null
// raw is an empty Set.
func Parse(raw json.RawMessage) (Set, error) {
	var in map[string][]wire
	if len(raw) == 0 || string(raw) == "null" {
		return Set{}, nil
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return Set{}, fmt.Errorf("%w: network.rules must map domains to lists of rules: %v", ErrInvalid, err)
	}
	if len(in) > MaxDomains {
		return Set{}, fmt.Errorf("%w: at most %d domains", ErrInvalid, MaxDomains)
	}
	s := Set{exact: map[string][]Header{}}
	seen := map[egress.Domain]bool{}
	for key, list := range in {
		d, err := parseKey(key)
		if err != nil {
			return Set{}, err
		}
		if seen[d] {
			return Set{}, fmt.Errorf("%w: domain %q given twice", ErrInvalid, key)
		}
		seen[d] = true
		hs, err := parseHeaders(key, list)
		if err != nil {
			return Set{}, err
		}
		if d.Wildcard {
			s.wildcard = append(s.wildcard, wild{d, hs})
		} else {
			s.exact[d.Name] = hs
		}
	}
	sort.Slice(s.wildcard, func(i, j int) bool {
		a, b := s.wildcard[i].dom.Name, s.wildcard[j].dom.Name
		return len(a) > len(b) || len(a) == len(b) && a < b
	})
	return s, nil
}

// parseKey accepts "name" or "*.name"; a bare "*", IP literals and CIDRs
// are refused (rules match names: the name the client states and sbx's DNS
// filter resolved).
func parseKey(key string) (egress.Domain, error) {
	k := strings.TrimSpace(key)
	if _, err := netip.ParseAddr(k); err == nil || strings.Contains(k, "/") {
		return egress.Domain{}, fmt.Errorf("%w: rule key %q: rules match domain names, not IPs or CIDRs", ErrInvalid, key)
	}
	d, err := egress.ParseDomain(k)
	if err != nil {
		return d, fmt.Errorf("%w: rule key %q is not a domain or *.domain", ErrInvalid, key)
	}
	return d, nil
}

// parseHeaders flattens a domain's rules into its headers, in rule order;
// a later rule's header overrides an earlier one of the same name.
func parseHeaders(key string, list []wire) ([]Header, error) {
	idx := map[string]int{}
	var out []Header
	for _, r := range list {
		if r.Transform == nil {
			continue
		}
		names := make([]string, 0, len(r.Transform.Headers))
		for n := range r.Transform.Headers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			h, err := checkHeader(key, n, r.Transform.Headers[n])
			if err != nil {
				return nil, err
			}
			if i, ok := idx[h.Name]; ok {
				out[i] = h
				continue
			}
			idx[h.Name] = len(out)
			out = append(out, h)
		}
	}
	if len(out) > MaxHeadersPerDomain {
		return nil, fmt.Errorf("%w: %q: at most %d headers", ErrInvalid, key, MaxHeadersPerDomain)
	}
	return out, nil
}

// forbidden are headers a rule may not set: hop-by-hop ones, framing, and
// Host (which would send the request to another site than the one matched).
var forbidden = map[string]bool{
	"Host": true, "Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Transfer-Encoding": true, "Te": true, "Trailer": true, "Upgrade": true,
	"Content-Length": true, "Proxy-Authorization": true, "Proxy-Authenticate": true,
}

func checkHeader(key, name, value string) (Header, error) {
	if !validToken(name) {
		return Header{}, fmt.Errorf("%w: %q: header name %q is not an HTTP token", ErrInvalid, key, trunc(name))
	}
	c := http.CanonicalHeaderKey(name)
	if forbidden[c] {
		return Header{}, fmt.Errorf("%w: %q: header %s cannot be set by a rule", ErrInvalid, key, c)
	}
	if len(value) > MaxValueBytes || strings.ContainsAny(value, "\r\n\x00") {
		return Header{}, fmt.Errorf("%w: %q: header %s: the value must be at most %d bytes without CR, LF or NUL", ErrInvalid, key, c, MaxValueBytes)
	}
	if _, err := secrets.Names(value); err != nil {
		return Header{}, fmt.Errorf("%w: %q: header %s: %w", ErrInvalid, key, c, err)
	}
	return Header{Name: c, Value: value}, nil
}

// validToken reports whether s is an RFC 9110 token.
func validToken(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Empty reports whether s has no rules.
func (s Set) Empty() bool { return len(s.exact) == 0 && len(s.wildcard) == 0 }

// Match returns the headers for host (any case, optional trailing dot, no
// port): the exact rule if there is one, else the longest matching
// wildcard; rule sets are not merged. ok is false when none matches.
func (s Set) Match(host string) (hs []Header, ok bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if hs, ok := s.exact[host]; ok {
		return hs, true
	}
	for _, w := range s.wildcard {
		if w.dom.Match(host) {
			return w.headers, true
		}
	}
	return nil, false
}

// Domains lists the rule keys (exact names, and wildcards as *.name).
func (s Set) Domains() []egress.Domain {
	var out []egress.Domain
	for n := range s.exact {
		out = append(out, egress.Domain{Name: n})
	}
	for _, w := range s.wildcard {
		out = append(out, w.dom)
	}
	return out
}

// SecretNames lists the secrets the rules' values refer to, each once.
func (s Set) SecretNames() []string {
	seen := map[string]bool{}
	var out []string
	add := func(hs []Header) {
		for _, h := range hs {
			ns, _ := secrets.Names(h.Value)
			for _, n := range ns {
				if !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	}
	for _, hs := range s.exact {
		add(hs)
	}
	for _, w := range s.wildcard {
		add(w.headers)
	}
	sort.Strings(out)
	return out
}
