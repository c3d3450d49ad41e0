package guard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// ip6tSoOriginalDst is IP6T_SO_ORIGINAL_DST (linux/netfilter_ipv6/
// ip6_tables.h), which x/sys/unix does not define.
const ip6tSoOriginalDst = 80

// originalDst returns the destination a redirected (nftables redirect/dnat)
// TCP connection was sent to before the kernel's NAT rewrote it, from
// conntrack: SO_ORIGINAL_DST for IPv4, IP6T_SO_ORIGINAL_DST for IPv6.
func originalDst(c net.Conn) (netip.AddrPort, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return netip.AddrPort{}, errors.New("original destination: not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination: %w", err)
	}
	local, _ := netip.ParseAddrPort(c.LocalAddr().String())
	var dst netip.AddrPort
	var serr error
	err = raw.Control(func(fd uintptr) {
		if local.Addr().Unmap().Is4() {
			dst, serr = originalDst4(int(fd))
		} else {
			dst, serr = originalDst6(int(fd))
		}
	})
	if err = errors.Join(err, serr); err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination: %w", err)
	}
	return dst, nil
}

// originalDst4 reads a struct sockaddr_in; IPv6Mreq is merely a 16-byte
// buffer of the right size (the usual trick, x/sys has no sockaddr getter).
func originalDst4(fd int) (netip.AddrPort, error) {
	m, err := unix.GetsockoptIPv6Mreq(fd, unix.SOL_IP, unix.SO_ORIGINAL_DST)
	if err != nil {
		return netip.AddrPort{}, err
	}
	b := m.Multiaddr
	port := binary.BigEndian.Uint16(b[2:4])
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), nil
}

// originalDst6 reads a struct sockaddr_in6 through the 32-byte
// IPv6MTUInfo, whose first member is one.
func originalDst6(fd int) (netip.AddrPort, error) {
	m, err := unix.GetsockoptIPv6MTUInfo(fd, unix.SOL_IPV6, ip6tSoOriginalDst)
	if err != nil {
		return netip.AddrPort{}, err
	}
	var p [2]byte // sin6_port is in network order in memory
	binary.NativeEndian.PutUint16(p[:], m.Addr.Port)
	return netip.AddrPortFrom(netip.AddrFrom16(m.Addr.Addr), binary.BigEndian.Uint16(p[:])), nil
}
