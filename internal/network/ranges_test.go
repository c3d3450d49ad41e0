package network

import (
	"net/netip"
	"testing"

	"github.com/sbx-dev/sbx/internal/egress"
)

func TestBlockedSpans(t *testing.T) {
	m := &Manager{cfg: Config{Subnet: netip.MustParsePrefix("10.210.0.0/16"),
		Egress: Egress{Open: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16")}}}}
	in := func(a string) bool {
		v := ipv4(netip.MustParseAddr(a))
		for _, s := range m.blockedSpans() {
			if s.lo <= v && v <= s.hi {
				return true
			}
		}
		return false
	}
	for a, want := range map[string]bool{
		"10.1.2.3": false, "10.210.0.2": true, "10.209.255.255": false, "10.211.0.0": false,
		"169.254.169.254": false, "192.168.1.1": true, "100.100.100.200": true, "1.1.1.1": false,
		"255.255.255.255": true, "0.0.0.0": true,
	} {
		if got := in(a); got != want {
			t.Errorf("blocked(%s) = %v, want %v", a, got, want)
		}
	}
	for _, b := range egress.AlwaysBlocked {
		if b.Addr().Is4() && !b.Contains(netip.MustParseAddr("10.0.0.1")) && !b.Contains(netip.MustParseAddr("169.254.0.1")) && !in(b.Addr().String()) {
			t.Errorf("%s no longer blocked", b)
		}
	}
}

func TestIntervalElements(t *testing.T) {
	s := spansOf([]netip.Prefix{netip.MustParsePrefix("8.8.8.0/24"), netip.MustParsePrefix("8.8.8.8/32"),
		netip.MustParsePrefix("8.8.9.0/24"), netip.MustParsePrefix("255.0.0.0/8"), netip.MustParsePrefix("::/0")})
	if len(s) != 2 || s[0] != (span{ipv4(netip.MustParseAddr("8.8.8.0")), ipv4(netip.MustParseAddr("8.8.9.255"))}) {
		t.Fatalf("spans = %v (overlapping and adjacent ranges merge, v6 skipped)", s)
	}
	els := intervalElements(s)
	if len(els) != 3 || !els[1].IntervalEnd || els[2].IntervalEnd {
		t.Fatalf("elements = %+v (a span reaching the top has no end element)", els)
	}
}
