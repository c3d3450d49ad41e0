package network

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// internet is a fake outside world for egress tests: a netns "egtNN"
// joined to the host by link "xegNN" (not a sandbox link), holding the
// public-looking addresses 11.233.NN.2 and .3 with a TCP server on each
// (port 8080, answers "hi"). It has no route beyond its /24, so a sandbox
// gets answers only through the host's masquerade. The host side
// 11.233.NN.1 forwards (it plays the uplink).
type internet struct {
	host, a, b netip.Addr
	ns         netns.NsHandle
	link       string
}

func newInternet(t testing.TB, n int) *internet {
	t.Helper()
	path := filepath.Join("/run/netns", fmt.Sprintf("egt%02d", n))
	removeNS(path)
	ns, err := newNamedNS(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close(); removeNS(path) })
	in := &internet{host: netip.MustParseAddr(fmt.Sprintf("11.233.%d.1", n)), ns: ns, link: fmt.Sprintf("xeg%02d", n),
		a: netip.MustParseAddr(fmt.Sprintf("11.233.%d.2", n)), b: netip.MustParseAddr(fmt.Sprintf("11.233.%d.3", n))}
	host, err := addVeth(&Link{ID: in.link, HostIf: in.link}, ns)
	if host != nil {
		t.Cleanup(func() { netlink.LinkDel(host) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := addrPrefixUp(nil, host, netip.PrefixFrom(in.host, 24)); err != nil {
		t.Fatal(err)
	}
	if err := sysctl("ipv4/conf/"+in.link+"/forwarding", "1"); err != nil {
		t.Fatal(err)
	}
	in.configure(t)
	return in
}

// configure addresses eth0 inside and starts the servers.
func (in *internet) configure(t testing.TB) {
	h, err := netlink.NewHandleAt(in.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	eth, err := h.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []netip.Addr{in.a, in.b} {
		if err := addrPrefixUp(h, eth, netip.PrefixFrom(a, 24)); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []netip.Addr{in.a, in.b} {
		var ln net.Listener
		if err := inNS(in.ns, func() (err error) {
			ln, err = net.Listen("tcp", netip.AddrPortFrom(a, 8080).String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		serve(t, ln)
	}
}

func (in *internet) addr(a netip.Addr) string { return netip.AddrPortFrom(a, 8080).String() }

// addrPrefixUp gives link the address p and brings it up (h nil: host).
func addrPrefixUp(h *netlink.Handle, link netlink.Link, p netip.Prefix) error {
	if h == nil {
		h = &netlink.Handle{}
	}
	ad := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}}
	if err := h.AddrAdd(link, ad); err != nil {
		return fmt.Errorf("address %s on %s: %w", p, link.Attrs().Name, err)
	}
	return h.LinkSetUp(link)
}
