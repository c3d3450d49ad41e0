package network

import (
	"net/netip"
	"time"

	"github.com/google/nftables"
)

// maxRemembered bounds the resolved addresses remembered per sandbox for a
// rebuild (rememberResolved); past it, new ones are still opened in the
// kernel but a rebuild does not restore them (the sandbox resolves again).
const maxRemembered = 4096

// resolvedMemo is the addresses AddResolved opened to one sandbox, each
// with its expiry: what the kernel's resolved set holds, for a rebuild.
type resolvedMemo map[netip.Addr]time.Time

// rememberResolved records addrs as open to id until now+ttl; expired
// entries are dropped when the memo is full. Called with id's lock held.
func (m *Manager) rememberResolved(id string, addrs []netip.Addr, ttl time.Duration) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	memo := m.resolved[id]
	if memo == nil {
		memo = resolvedMemo{}
		m.resolved[id] = memo
	}
	for _, a := range addrs {
		if _, ok := memo[a]; !ok && len(memo) >= maxRemembered {
			memo.prune(now)
			if len(memo) >= maxRemembered {
				continue
			}
		}
		memo[a] = now.Add(ttl)
	}
}

// prune drops the entries expired at now.
func (r resolvedMemo) prune(now time.Time) {
	for a, exp := range r {
		if !now.Before(exp) {
			delete(r, a)
		}
	}
}

// resolvedElements is id's remembered addresses still open, each with the
// rest of its lifetime (at least a millisecond: the kernel's unit).
func (m *Manager) resolvedElements(id string) []nftables.SetElement {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []nftables.SetElement
	for a, exp := range m.resolved[id] {
		if left := exp.Sub(now); left >= time.Millisecond {
			k := a.As4()
			out = append(out, nftables.SetElement{Key: k[:], Timeout: left})
		}
	}
	return out
}
