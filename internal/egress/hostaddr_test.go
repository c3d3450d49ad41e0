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
