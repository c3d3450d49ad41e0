package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Setup creates the network of sandbox id: netns, veth, addresses, routes.
// On error everything made so far is removed. Setup of an existing id
// returns its link.
func (m *Manager) Setup(_ context.Context, id string) (*Link, error) {
	if len(id) < 12 || len(id) > 64 {
		return nil, errBadID
	}
	m.mu.Lock()
	if l, ok := m.links[id]; ok {
		m.mu.Unlock()
		return l, nil
	}
	i, err := m.allocateLocked(id)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	h, s := m.addrs(i)
	l := &Link{ID: id, NetNSPath: m.nsPath(id), HostIf: m.ifName(id), HostIP: h, SandboxIP: s}
	if err := m.create(l); err != nil {
		_ = m.destroy(l.ID)
		m.mu.Lock()
		delete(m.used, i)
		m.mu.Unlock()
		return nil, fmt.Errorf("network setup %s: %w", id, err)
	}
	m.mu.Lock()
	m.links[id] = l
	m.mu.Unlock()
	return l, nil
}

func (m *Manager) create(l *Link) error {
	ns, err := newNamedNS(l.NetNSPath)
	if err != nil {
		return err
	}
	defer ns.Close()
	peer := "p" + l.ID[:12] // ≤ 15 chars; renamed eth0 inside
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: l.HostIf, Alias: l.ID, MTU: 1500},
		PeerName: peer, PeerNamespace: netlink.NsFd(int(ns))}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth: %w", err)
	}
	host, err := netlink.LinkByName(l.HostIf)
	if err != nil {
		return err
	}
	_ = netlink.LinkSetAlias(host, l.ID)
	if err := addrUp(nil, host, l.HostIP, 30); err != nil {
		return err
	}
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+l.HostIf+"/disable_ipv6", []byte("1"), 0)
	return configureInside(ns, peer, l)
}

// configureInside names the peer eth0, addresses it, and routes via the host.
func configureInside(ns netns.NsHandle, peer string, l *Link) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	p, err := h.LinkByName(peer)
	if err != nil {
		return err
	}
	if err := h.LinkSetName(p, "eth0"); err != nil {
		return err
	}
	if err := addrUp(h, p, l.SandboxIP, 30); err != nil {
		return err
	}
	if lo, err := h.LinkByName("lo"); err == nil {
		_ = h.LinkSetUp(lo)
	}
	gw := net.IP(l.HostIP.AsSlice())
	if err := h.RouteAdd(&netlink.Route{LinkIndex: p.Attrs().Index, Gw: gw}); err != nil {
		return fmt.Errorf("default route: %w", err)
	}
	return disableIPv6(ns)
}

func addrUp(h *netlink.Handle, l netlink.Link, a netip.Addr, bits int) error {
	if h == nil {
		h = &netlink.Handle{}
	}
	ad := &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, 32)}}
	if err := h.AddrAdd(l, ad); err != nil {
		return fmt.Errorf("address %s: %w", a, err)
	}
	return h.LinkSetUp(l)
}

// inNS runs fn on a thread switched into ns, restoring the thread after.
func inNS(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread dies with the goroutine if restore fails
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		err = fn()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

func disableIPv6(ns netns.NsHandle) error {
	return inNS(ns, func() error {
		for _, k := range []string{"all", "default", "eth0", "lo"} {
			_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0)
		}
		return nil
	})
}

// newNamedNS creates a network namespace bind-mounted at path.
func newNamedNS(path string) (netns.NsHandle, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return -1, fmt.Errorf("netns file: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread ends in the new netns
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare netns: %w", err)
			return
		}
		errc <- unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, "")
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return -1, err
	}
	return netns.GetFromPath(path)
}

// Teardown removes the network of id; missing pieces are not errors.
func (m *Manager) Teardown(_ context.Context, id string) error {
	err := m.destroy(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.links[id]; ok && err == nil {
		delete(m.used, m.index(l.HostIP))
		delete(m.links, id)
	}
	return err
}

func (m *Manager) destroy(id string) error {
	if len(id) < 12 {
		return errBadID
	}
	var errs []error
	if l, err := netlink.LinkByName(m.ifName(id)); err == nil {
		if a := l.Attrs().Alias; a == "" || a == id {
			errs = append(errs, netlink.LinkDel(l))
		}
	}
	p := m.nsPath(id)
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
