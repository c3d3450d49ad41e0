package network

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// createNetwork makes l's netns and veth pair and configures both ends,
// pushing the undo of each step it completes.
func (m *Manager) createNetwork(l *Link, undo *undoStack) error {
	ns, err := newNamedNS(l.NetNSPath)
	if err != nil {
		return err
	}
	defer ns.Close()
	undo.push(func() error { return removeNS(l.NetNSPath) })
	host, err := addVeth(l, ns)
	if host != nil {
		undo.push(func() error { return netlink.LinkDel(host) })
	}
	if err != nil {
		return err
	}
	if err := configureHost(host, l); err != nil {
		return err
	}
	return configureInside(ns, l)
}

// addVeth creates the pair: l.HostIf (alias l.ID) on the host, eth0 in ns.
// It fails if a link of that name exists (a leftover or a name collision).
// The returned link is non-nil whenever the pair was made, even on error.
func addVeth(l *Link, ns netns.NsHandle) (netlink.Link, error) {
	veth := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: l.HostIf, Alias: l.ID, MTU: 1500},
		PeerName:  "eth0", PeerNamespace: netlink.NsFd(int(ns)),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("add veth %s: %w", l.HostIf, err)
	}
	host, err := netlink.LinkByName(l.HostIf)
	if err != nil {
		return veth, fmt.Errorf("find veth %s: %w", l.HostIf, err)
	}
	if host.Attrs().Alias != l.ID {
		if err := netlink.LinkSetAlias(host, l.ID); err != nil {
			return host, fmt.Errorf("alias %s: %w", l.HostIf, err)
		}
	}
	return host, nil
}

// configureHost sets the host end's sysctls (no IPv6, IPv4 forwarding on,
// strict reverse-path filter) before bringing it up at l.HostIP/30. What
// is forwarded is decided by the sandbox's nftables chains alone.
func configureHost(host netlink.Link, l *Link) error {
	for key, v := range map[string]string{
		"ipv6/conf/" + l.HostIf + "/disable_ipv6": "1",
		"ipv4/conf/" + l.HostIf + "/forwarding":   "1",
		"ipv4/conf/" + l.HostIf + "/rp_filter":    "1",
	} {
		if err := sysctl(key, v); err != nil {
			return err
		}
	}
	return addrUp(nil, host, l.HostIP)
}

// configureInside brings lo and eth0 up, eth0 at l.SandboxIP/30 with a
// default route via l.HostIP.
func configureInside(ns netns.NsHandle, l *Link) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in netns: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	eth, err := h.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("find eth0: %w", err)
	}
	if err := addrUp(h, eth, l.SandboxIP); err != nil {
		return err
	}
	r := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.IP(l.HostIP.AsSlice())}
	if err := h.RouteAdd(r); err != nil {
		return fmt.Errorf("default route: %w", err)
	}
	return nil
}

// addrUp gives link the address a/30 and brings it up (h nil: host netns).
func addrUp(h *netlink.Handle, link netlink.Link, a netip.Addr) error {
	if h == nil {
		h = &netlink.Handle{}
	}
	ad := &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(30, 32)}}
	if err := h.AddrAdd(link, ad); err != nil {
		return fmt.Errorf("address %s on %s: %w", a, link.Attrs().Name, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s up: %w", link.Attrs().Name, err)
	}
	return nil
}
