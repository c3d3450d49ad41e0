package egress

import "net/netip"

// Ranges decides where a connection the daemon makes on a tenant's behalf
// (to a sandbox's egress proxy, to a team's image registry) may go:
// nowhere in Blocked, nor to one of the host's own addresses (HostAddr:
// its services, whatever the address's range), unless in Open; never in
// Never (the sandbox subnet: other sandboxes and the host sides of their
// links), never to an unspecified or invalid address.
type Ranges struct {
	Blocked []netip.Prefix // AlwaysBlocked by default (nil)
	Open    []netip.Prefix // the operator's exceptions (e.g. --egress-proxy-open)
	Never   []netip.Prefix // closed whatever Open says
}

// Allowed reports whether a connection may go to ip.
func (r Ranges) Allowed(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsUnspecified() || InAny(r.Never, ip) {
		return false
	}
	blocked := r.Blocked
	if blocked == nil {
		blocked = AlwaysBlocked
	}
	return !InAny(blocked, ip) && !HostAddr(ip) || InAny(r.Open, ip)
}

// Public reports whether ip is allowed without the operator's Open
// exceptions: an address anyone on the internet may reach, not one the
// operator opened inside its own perimeter.
func (r Ranges) Public(ip netip.Addr) bool {
	r.Open = nil
	return r.Allowed(ip)
}

// InAny reports whether one of ps contains ip.
func InAny(ps []netip.Prefix, ip netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
