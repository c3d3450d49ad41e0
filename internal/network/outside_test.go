package network

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// outside is a fake internet host: a netns joined to the host by its own
// veth (not a sandbox link), with a TCP server on addr.
type outside struct {
	addr     netip.AddrPort
	hostAddr netip.Addr
}

// newOutside builds the outside host for test n (10.232.n.0/30) with IPv4
// forwarding enabled on its host link only, so a sandbox could reach it if
// nothing stopped it. Everything is removed at cleanup.
func newOutside(t *testing.T, n int) *outside {
	t.Helper()
	path := filepath.Join("/run/netns", fmt.Sprintf("xt%02dout", n))
	removeNS(path)
	ns, err := newNamedNS(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close(); removeNS(path) })
	name := fmt.Sprintf("xt%02do", n)
	o := &outside{hostAddr: netip.MustParseAddr(fmt.Sprintf("10.232.%d.1", n)),
		addr: netip.MustParseAddrPort(fmt.Sprintf("10.232.%d.2:8080", n))}
	l := &Link{ID: name, HostIf: name, HostIP: o.hostAddr, SandboxIP: o.addr.Addr()}
	host, err := addVeth(l, ns)
	if host != nil {
		t.Cleanup(func() { netlink.LinkDel(host) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := addrUp(nil, host, o.hostAddr); err != nil {
		t.Fatal(err)
	}
	if err := sysctl("ipv4/conf/"+name+"/forwarding", "1"); err != nil {
		t.Fatal(err)
	}
	if err := configureInside(ns, l); err != nil {
		t.Fatal(err)
	}
	o.serve(t, ns)
	return o
}

func (o *outside) serve(t *testing.T, ns netns.NsHandle) {
	var ln net.Listener
	if err := inNS(ns, func() (err error) {
		ln, err = net.Listen("tcp", o.addr.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	serve(t, ln)
}

// allowForwarding turns IPv4 forwarding on for l's host link (the Manager
// turns it off), so only the nftables rules stand between l and the world.
func allowForwarding(t *testing.T, l *Link) {
	if err := sysctl("ipv4/conf/"+l.HostIf+"/forwarding", "1"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile("/proc/sys/net/ipv4/conf/" + l.HostIf + "/forwarding"); string(b) != "1\n" {
		t.Fatalf("forwarding on %s = %q", l.HostIf, b)
	}
}
