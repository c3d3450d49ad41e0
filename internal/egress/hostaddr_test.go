package egress

import (
	"net"
	"net/netip"
	"testing"
)

// Every address of the host's interfaces, whatever its range, is the
// host's; a public address elsewhere is not.
func TestHostAddr(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || p.Addr().IsLinkLocalUnicast() {
			continue // link-local needs a zone to route
		}
		if !HostAddr(p.Addr()) {
			t.Errorf("HostAddr(%s) = false for an interface address", p.Addr())
		}
	}
	for _, s := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1"} {
		if !HostAddr(netip.MustParseAddr(s)) {
			t.Errorf("HostAddr(%s) = false", s)
		}
	}
	if HostAddr(netip.MustParseAddr("93.184.216.34")) {
		t.Error("HostAddr(93.184.216.34) = true")
	}
}

// A proxy or registry at one of the host's own addresses is refused even
// where its range is not blocked, unless the operator opens it.
func TestRangesRefuseHostAddr(t *testing.T) {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || p.Addr().IsLinkLocalUnicast() {
			continue
		}
		ip := p.Addr()
		if (Ranges{Blocked: []netip.Prefix{}}).Allowed(ip) {
			t.Errorf("Allowed(%s), a host address, with nothing blocked", ip)
		}
		if !(Ranges{Blocked: []netip.Prefix{}, Open: []netip.Prefix{netip.PrefixFrom(ip, ip.BitLen())}}).Allowed(ip) {
			t.Errorf("Allowed(%s) = false with the address open", ip)
		}
	}
	if !(Ranges{}).Allowed(netip.MustParseAddr("93.184.216.34")) {
		t.Error("Allowed(93.184.216.34) = false")
	}
}

// TestRangesRefuseEmbeddedIPv4: IPv6 forms that carry an IPv4 address a
// gateway may translate to (IPv4-mapped, -compatible and -translated,
// NAT64's well-known and local-use prefixes, 6to4, Teredo) are refused
// as the daemon dials them (a proxy's or a registry's address): each of
// these names 169.254.169.254 or 127.0.0.1. Before, the local-use NAT64
// prefix, 6to4, Teredo, IPv4-compatible and -translated forms passed.
func TestRangesRefuseEmbeddedIPv4(t *testing.T) {
	for _, ip := range []string{
		"::ffff:169.254.169.254",    // IPv4-mapped
		"::169.254.169.254",         // IPv4-compatible (deprecated)
		"::ffff:0:169.254.169.254",  // IPv4-translated (SIIT)
		"64:ff9b::a9fe:a9fe",        // NAT64, well-known prefix
		"64:ff9b:1::a9fe:a9fe",      // NAT64, local-use prefix (RFC 8215)
		"64:ff9b:1:a9fe:a9:fe00::",  // local-use NAT64 with a /56 embedding
		"2002:a9fe:a9fe::1",         // 6to4 of 169.254.169.254
		"2002:7f00:1::1",            // 6to4 of 127.0.0.1
		"2001:0:a9fe:a9fe::1",       // Teredo, server 169.254.169.254
		"2001:0:4136:e378::5601:56", // Teredo, obfuscated client
	} {
		if (Ranges{}).Allowed(netip.MustParseAddr(ip)) {
			t.Errorf("Allowed(%s) = true, an IPv6 form of an internal IPv4 address", ip)
		}
	}
	for _, ip := range []string{"2606:4700::1111", "2001:4860:4860::8888", "2a00:1450::1"} {
		if !(Ranges{}).Allowed(netip.MustParseAddr(ip)) {
			t.Errorf("Allowed(%s) = false, a global address", ip)
		}
	}
}
