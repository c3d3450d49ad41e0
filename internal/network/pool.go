package network

import (
	"fmt"
	"net/netip"
)

// pool hands out the /30s of a subnet: slot i is the subnet's i-th /30, its
// .1 the host side and .2 the sandbox. Slot 0 (the subnet's network
// address) is never used. Allocation goes round-robin from the last slot
// handed out, so a released address is not reused at once (a stale
// connection to it cannot reach a new sandbox). Not safe for concurrent use:
// the Manager's mu guards it.
type pool struct {
	base uint32
	used []bool
	next int
}

func newPool(p netip.Prefix) *pool {
	return &pool{base: ipv4(p.Addr()), used: make([]bool, 1<<(32-p.Bits()-2)), next: 1}
}

// get reserves a free slot.
func (p *pool) get() (int, error) {
	n := len(p.used)
	for k := 0; k < n; k++ {
		i := (p.next + k) % n
		if i != 0 && !p.used[i] {
			p.used[i], p.next = true, i+1
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w (%d sandboxes)", ErrExhausted, n-1)
}

// reserve marks the slot holding host address a as used; false if a is not
// the host side of a slot of this pool.
func (p *pool) reserve(a netip.Addr) (int, bool) {
	if !a.Is4() {
		return 0, false
	}
	off := ipv4(a) - p.base
	i := int(off / 4)
	if off%4 != 1 || i <= 0 || i >= len(p.used) {
		return 0, false
	}
	p.used[i] = true
	return i, true
}

func (p *pool) put(i int) { p.used[i] = false }

// addrs returns the host and sandbox addresses of slot i.
func (p *pool) addrs(i int) (host, sandbox netip.Addr) {
	v := p.base + uint32(i)*4
	return addr4(v + 1), addr4(v + 2)
}

func ipv4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func addr4(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
