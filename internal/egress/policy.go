// Package egress decides what a sandbox may reach. It parses E2B network
// settings (allow_internet_access, network.allowOut / denyOut) into a Policy,
// matches addresses and domain names against it, and knows the ranges that
// are blocked whatever a request says; Resolutions remembers what each
// sandbox's allowed names resolved to. The kernel enforces the IP part
// (nftables, internal/network); the names are enforced by the two servers
// built on this package: the DNS filter (egress/dnsfilter) and the SNI/Host
// guard (egress/guard).
package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrInvalid is returned (wrapped) for a malformed rule.
var ErrInvalid = errors.New("invalid network rule")

// AlwaysBlocked are never reachable from a sandbox unless the operator opens
// a range explicitly: private, shared, loopback, link-local (cloud metadata
// included), multicast, reserved, benchmarking, and the IPv6 equivalents,
// with every IPv6 form that carries an IPv4 address a gateway may
// translate or tunnel to (IPv4-mapped, -compatible and -translated, NAT64's
// well-known and local-use prefixes, 6to4, and Teredo within the IETF
// protocol block 2001::/23).
var AlwaysBlocked = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
	"::/96", "::1/128", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48",
	"100::/64", "2001::/23", "2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "ff00::/8",
)

// MetadataNames are cloud metadata host names, refused by the DNS filter.
var MetadataNames = []string{"metadata.google.internal", "metadata", "instance-data", "metadata.azure.com"}

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Policy is a sandbox's egress policy. The zero value allows the internet
// (minus AlwaysBlocked), E2B's default.
type Policy struct {
	DenyAll   bool           // allow_internet_access: false, or denyOut 0.0.0.0/0
	AllowNets []netip.Prefix // allowOut IPs/CIDRs (override a deny-all for these)
	AllowDoms []Domain       // allowOut domain names
	DenyNets  []netip.Prefix // denyOut IPs/CIDRs
	// Proxy, when set, tunnels the outbound TCP the rules above allow
	// through a SOCKS5 proxy (network.egressProxy); nil: direct.
	Proxy *Proxy
}

// Domain is an allowed name: exact ("example.com") or wildcard
// ("*.example.com", which matches sub-domains only, at label boundaries).
type Domain struct {
	Name     string // lower case, no trailing dot, without "*."
	Wildcard bool
}

// Parse builds a Policy from E2B fields. allowInternet nil means true.
func Parse(allowInternet *bool, allowOut, denyOut []string) (Policy, error) {
	var p Policy
	if allowInternet != nil && !*allowInternet {
		p.DenyAll = true
	}
	for _, s := range denyOut {
		pre, err := parsePrefix(s)
		if err != nil {
			return p, fmt.Errorf("%w: denyOut %.64q must be an IP or CIDR", ErrInvalid, s)
		}
		if pre.Bits() == 0 {
			p.DenyAll = true
			continue
		}
		p.DenyNets = append(p.DenyNets, pre)
	}
	for _, s := range allowOut {
		if pre, err := parsePrefix(s); err == nil {
			p.AllowNets = append(p.AllowNets, pre)
			continue
		}
		d, err := ParseDomain(s)
		if err != nil {
			return p, err
		}
		p.AllowDoms = append(p.AllowDoms, d)
	}
	if len(p.AllowDoms) > 0 {
		// A domain allow-list means: only those names (and allowed IPs).
		p.DenyAll = true
	}
	return p, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// ParseDomain validates a domain rule.
func ParseDomain(s string) (Domain, error) {
	name := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
	d := Domain{}
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		d.Wildcard, name = true, rest
	}
	if !ValidName(name) {
		return d, fmt.Errorf("%w: %.64q is not an IP, CIDR or domain name", ErrInvalid, s)
	}
	d.Name = name
	return d, nil
}

// ValidName reports whether n (lower case, no trailing dot) is a DNS name
// a rule may name: labels of [a-z0-9_-], not starting or ending with '-'.
func ValidName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Match reports whether name (any case, optional trailing dot) is covered.
// "*.example.com" matches "a.example.com" and "a.b.example.com", never
// "example.com" or "evil-example.com".
func (d Domain) Match(name string) bool {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if !d.Wildcard {
		return name == d.Name
	}
	return strings.HasSuffix(name, "."+d.Name) && len(name) > len(d.Name)+1
}

// AllowsName reports whether DNS for name may be resolved upstream.
func (p Policy) AllowsName(name string) bool {
	n := strings.TrimSuffix(strings.ToLower(name), ".")
	for _, m := range MetadataNames {
		if n == m {
			return false
		}
	}
	if !p.DenyAll {
		return true
	}
	for _, d := range p.AllowDoms {
		if d.Match(n) {
			return true
		}
	}
	return false
}

// AllowsAddr reports whether a connection to a may be opened on the IP level
// (names resolved by the DNS filter are added separately).
func (p Policy) AllowsAddr(a netip.Addr) bool {
	a = a.Unmap()
	if InAny(AlwaysBlocked, a) {
		return false
	}
	for _, n := range p.AllowNets {
		if n.Contains(a) {
			return true
		}
	}
	for _, n := range p.DenyNets {
		if n.Contains(a) {
			return false
		}
	}
	return !p.DenyAll
}
