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
