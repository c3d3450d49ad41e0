package network

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// A sandbox's flows outlive its link in the host's connection tracking: a
// connection of the daemon's to the agent or one the sandbox made to the
// internet stays "established" for days (nf_conntrack_tcp_timeout_established)
// once the link is gone, since no FIN or RST can pass any more. The next
// sandbox given the same addresses would inherit them: the daemon's SYN to
// its agent could meet a stale entry of the same ports and be lost, and the
// sandbox's packets matching a previous tenant's flow would pass as
// established, past its own egress policy. So teardown forgets the flows of
// the sandbox's /30 before its addresses go back to the pool, and New
// forgets those of the subnet's addresses no live network holds.

// flowMatch matches a conntrack flow one of whose four addresses (either
// direction's source and destination) it reports true for.
type flowMatch func(netip.Addr) bool

// MatchConntrackFlow implements netlink.CustomConntrackFilter.
func (f flowMatch) MatchConntrackFlow(fl *netlink.ConntrackFlow) bool {
	for _, ip := range []net.IP{fl.Forward.SrcIP, fl.Forward.DstIP, fl.Reverse.SrcIP, fl.Reverse.DstIP} {
		if a, ok := netip.AddrFromSlice(ip); ok && f(a.Unmap()) {
			return true
		}
	}
	return false
}

// forgetFlows deletes the host's IPv4 conntrack entries f matches (a
// flowMatch, or openedBy): a dump
// of the whole table, matched here. A dump the kernel interrupts (the table
// changed meanwhile) is retried. A kernel without connection tracking, or
// without its netlink interface (the dump then fails as an unknown
// subsystem, EINVAL), has nothing this can forget: that is no error, or
// every teardown there would fail and keep its sandbox's address.
func forgetFlows(f netlink.CustomConntrackFilter) error {
	_, err := retryDump(func() (uint, error) {
		return netlink.ConntrackDeleteFilters(netlink.ConntrackTable, netlink.InetFamily(unix.AF_INET), f)
	})
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	return flowErr(err)
}

func flowErr(err error) error {
	if err == nil || errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("forget conntrack entries: %w", err)
}

// forgetSandboxFlows forgets the flows of sandbox address sb's /30. Every
// flow of a sandbox starts or ends at sb: the host's to the agent, the
// sandbox's out (masqueraded) and to the host's redirects. Kernels with
// ctnetlink's filtered flush delete them in place (the original tuple's
// source is sb, then its destination), without a dump of the whole table
// (≈ 5 ms of CPU per 1,000 entries); older ones refuse that request as an
// incomplete tuple (EINVAL, never a flush of everything) and get
// forgetFlows.
func forgetSandboxFlows(sb netip.Addr) error {
	for _, dir := range []uint16{nl.CTA_IP_V4_SRC, nl.CTA_IP_V4_DST} {
		err := flushFiltered(sb, dir)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
			return forgetFlows(flowMatch(slotOf(sb).Contains))
		}
		if err := flowErr(err); err != nil {
			return err
		}
	}
	return nil
}

// ctnetlink's CTA_FILTER attribute and its flags (kernel
// nf_conntrack_netlink.c): which fields of the given tuple must match.
const (
	ctaFilter           = 25
	ctaFilterOrigFlags  = 1
	ctaFilterReplyFlags = 2
	ctaFilterFlagIPSrc  = 1 << 0
	ctaFilterFlagIPDst  = 1 << 1
)

// flushFiltered asks the kernel to delete every IPv4 flow whose original
// tuple has address a as its source (dir CTA_IP_V4_SRC) or destination.
func flushFiltered(a netip.Addr, dir uint16) error {
	req := nl.NewNetlinkRequest(int(netlink.ConntrackTable)<<8|nl.IPCTNL_MSG_CT_DELETE, unix.NLM_F_ACK)
	req.AddData(&nl.Nfgenmsg{NfgenFamily: unix.AF_INET, Version: nl.NFNETLINK_V0})
	orig := nl.NewRtAttr(unix.NLA_F_NESTED|nl.CTA_TUPLE_ORIG, nil)
	orig.AddRtAttr(unix.NLA_F_NESTED|nl.CTA_TUPLE_IP, nil).AddRtAttr(int(dir), a.AsSlice())
	flag := uint32(ctaFilterFlagIPSrc)
	if dir == nl.CTA_IP_V4_DST {
		flag = ctaFilterFlagIPDst
	}
	filter := nl.NewRtAttr(unix.NLA_F_NESTED|ctaFilter, nil)
	filter.AddRtAttr(ctaFilterOrigFlags, nl.Uint32Attr(flag))
	filter.AddRtAttr(ctaFilterReplyFlags, nl.Uint32Attr(0))
	req.AddData(orig)
	req.AddData(filter)
	_, err := req.Execute(unix.NETLINK_NETFILTER, 0)
	return err
}

// slotOf is the /30 holding sandbox address a (both sides of its link).
func slotOf(a netip.Addr) netip.Prefix {
	p, _ := a.Prefix(30)
	return p
}

// forgetStaleFlows forgets the flows of the subnet's addresses outside the
// /30s of the networks m holds (a crash's or an older daemon's leftovers).
func (m *Manager) forgetStaleFlows() error {
	m.mu.Lock()
	live := make(map[netip.Prefix]bool, len(m.links))
	for _, l := range m.links {
		live[slotOf(l.SandboxIP)] = true
	}
	m.mu.Unlock()
	return forgetFlows(flowMatch(func(a netip.Addr) bool { return m.cfg.Subnet.Contains(a) && !live[slotOf(a)] }))
}
