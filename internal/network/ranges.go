package network

import (
	"net/netip"
	"sort"

	"github.com/google/nftables"
)

// span is an inclusive range of IPv4 addresses.
type span struct{ lo, hi uint32 }

// spansOf returns the IPv4 prefixes of ps as sorted, merged spans; IPv6
// prefixes are skipped (sandbox links carry IPv4 only).
func spansOf(ps []netip.Prefix) []span {
	var out []span
	for _, p := range ps {
		if !p.Addr().Unmap().Is4() {
			continue
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), min(p.Bits(), 32)).Masked()
		lo := ipv4(p.Addr())
		out = append(out, span{lo, lo | uint32(uint64(1)<<(32-p.Bits())-1)})
	}
	return merge(out)
}

// merge sorts spans and joins overlapping or adjacent ones.
func merge(s []span) []span {
	sort.Slice(s, func(i, j int) bool { return s[i].lo < s[j].lo })
	var out []span
	for _, x := range s {
		if n := len(out); n > 0 && uint64(x.lo) <= uint64(out[n-1].hi)+1 {
			out[n-1].hi = max(out[n-1].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

// subtract returns the parts of a (merged) not covered by b (merged).
func subtract(a, b []span) []span {
	var out []span
	for _, x := range a {
		cur := []span{x}
		for _, y := range b {
			var next []span
			for _, c := range cur {
				if y.hi < c.lo || y.lo > c.hi {
					next = append(next, c)
					continue
				}
				if y.lo > c.lo {
					next = append(next, span{c.lo, y.lo - 1})
				}
				if y.hi < c.hi {
					next = append(next, span{y.hi + 1, c.hi})
				}
			}
			cur = next
		}
		out = append(out, cur...)
	}
	return out
}

// intervalElements encodes merged spans as the elements of an nftables
// interval set: each span's start, and the first address after it flagged
// as an interval end (omitted when the span reaches 255.255.255.255).
func intervalElements(s []span) []nftables.SetElement {
	var els []nftables.SetElement
	for _, x := range s {
		a := addr4(x.lo).As4()
		els = append(els, nftables.SetElement{Key: a[:]})
		if x.hi != ^uint32(0) {
			e := addr4(x.hi + 1).As4()
			els = append(els, nftables.SetElement{Key: e[:], IntervalEnd: true})
		}
	}
	return els
}
