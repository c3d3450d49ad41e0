package egress

import "net/netip"

// NameOf returns the newest unexpired name the DNS filter resolved to ip
// for sandbox that accept reports true for (accept nil: any), so a
// connection to ip can be named again (an egress proxy's remote DNS).
// It walks the sandbox's entries newest first: O(entries).
func (r *Resolutions) NameOf(sandbox string, ip netip.Addr, accept func(name string) bool) (string, bool) {
	ip = ip.Unmap()
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.boxes[sandbox]
	if b == nil {
		return "", false
	}
	for el := b.order.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*resolvedEntry)
		if e.key.addr != ip || now.After(e.expires) {
			continue
		}
		if accept == nil || accept(e.key.name) {
			return e.key.name, true
		}
	}
	return "", false
}
