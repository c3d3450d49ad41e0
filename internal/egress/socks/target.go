package socks

import (
	"net/netip"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Target is what a tunnelled connection is for: the address the sandbox's
// policy admitted (its original destination) and, when it was admitted by
// name (SNI/Host, or a name the DNS filter resolved to the address for the
// sandbox), that name.
type Target struct {
	Name string     // "" when the address alone was judged
	Addr netip.Addr // the address the daemon checked
}

// ask is what a proxy reached at proxyAddr is asked for. The name (remote
// DNS, E2B's semantics) only when the proxy is where anyone may reach it
// (an address r allows without its Open exceptions): a proxy the operator
// opened (--egress-proxy-open: on the host, or in a private network)
// resolves a name again where the daemon did not check it, and a name
// that answers the daemon's filter with a public address and the proxy
// with 127.0.0.1 or 169.254.169.254 (DNS rebinding) would reach the
// operator's own services; it is asked for the checked address instead.
func (t Target) ask(r egress.Ranges, proxyAddr netip.Addr) string {
	if t.Name == "" || !r.Public(proxyAddr) {
		return t.Addr.String()
	}
	return t.Name
}
