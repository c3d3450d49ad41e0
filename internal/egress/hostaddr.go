package egress

import (
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// HostAddr reports whether ip is one of this host's own addresses (the
// kernel routes it as local: any interface's address, whatever its range).
// A connection the daemon makes to such an address on a sandbox's behalf
// would reach the host's own services, which the kernel's rules keep from
// the sandbox itself (its packets to the host meet the input chain), so the
// daemon's proxies refuse it. A failed route lookup is not local (a dial
// to that address fails too).
func HostAddr(ip netip.Addr) bool {
	routes, err := netlink.RouteGet(ip.Unmap().AsSlice())
	if err != nil {
		return false
	}
	for _, r := range routes {
		if r.Type == unix.RTN_LOCAL {
			return true
		}
	}
	return false
}
