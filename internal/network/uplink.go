package network

import (
	"fmt"

	"github.com/vishvananda/netlink"
)

// DefaultRouteLinks returns the names of the links the host's IPv4 default
// routes go out of: the uplinks sandbox traffic is masqueraded through.
func DefaultRouteLinks() ([]string, error) {
	routes, err := retryDump(func() ([]netlink.Route, error) { return netlink.RouteList(nil, netlink.FAMILY_V4) })
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range routes {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		if l, err := netlink.LinkByIndex(r.LinkIndex); err == nil && !seen[l.Attrs().Name] {
			seen[l.Attrs().Name] = true
			out = append(out, l.Attrs().Name)
		}
	}
	return out, nil
}

// EnableForwarding turns IPv4 forwarding on for the given uplinks (only
// them, not the host's global switch): replies to masqueraded sandbox
// connections arrive there and must be forwarded to the sandbox's link.
// What is forwarded is decided by the nftables table.
func EnableForwarding(ifnames ...string) error {
	for _, n := range ifnames {
		if !validIfName(n) {
			return fmt.Errorf("network: bad uplink name %q", n)
		}
		if err := sysctl("ipv4/conf/"+n+"/forwarding", "1"); err != nil {
			return err
		}
	}
	return nil
}

// validIfName accepts a link name that is safe in a /proc/sys path.
func validIfName(n string) bool {
	if n == "" || len(n) > 15 || n == "." || n == ".." {
		return false
	}
	for _, c := range n {
		if c == '/' || c == 0 || c == ' ' {
			return false
		}
	}
	return true
}
