package network

import (
	"net/netip"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
)

// Egress configures the path out of every sandbox of the manager. The
// policy of each sandbox is set with SetPolicy (egress.go).
type Egress struct {
	// DNSPort is the host port of the DNS filter: udp/tcp 53 from a sandbox
	// whose policy allows DNS is redirected there (to its gateway address).
	// 0: no redirect, sandbox DNS is dropped.
	DNSPort uint16
	// GuardPort is the host port of the SNI/Host guard: TCP 80/443 of a
	// sandbox whose policy has domain rules, to an address its DNS
	// resolved, is redirected there. 0: no redirect (addresses only).
	GuardPort uint16
	// TunnelPort is the host port of the egress proxy tunnel: TCP of a
	// sandbox whose policy names a proxy is redirected there (nftproxy.go).
	// 0: such a policy cannot be applied (SetPolicy fails, closed).
	TunnelPort uint16
	// Open lists ranges the operator removes from egress.AlwaysBlocked. The
	// manager's own subnet stays blocked whatever Open says.
	Open      []netip.Prefix
	ConnRate  uint32        // new connections per second per sandbox (default 100)
	ConnBurst uint32        // burst of new connections (default 200)
	MaxConns  uint32        // concurrent connections per sandbox (default 1024)
	MinTTL    time.Duration // floor of a resolved address's lifetime (default 1 min, as egress.Resolutions)
	MaxTTL    time.Duration // ceiling of a resolved address's lifetime (default 1 h)
}

func (e Egress) withDefaults() Egress {
	if e.ConnRate == 0 {
		e.ConnRate = 100
	}
	if e.ConnBurst == 0 {
		e.ConnBurst = 2 * e.ConnRate
	}
	if e.MaxConns == 0 {
		e.MaxConns = 1024
	}
	if e.MinTTL == 0 {
		e.MinTTL = time.Minute
	}
	if e.MaxTTL < e.MinTTL {
		e.MaxTTL = max(time.Hour, e.MinTTL)
	}
	return e
}

// blockedSpans is egress.AlwaysBlocked minus the operator's open ranges,
// plus the manager's own subnet (other sandboxes, host sides).
func (m *Manager) blockedSpans() []span {
	b := subtract(spansOf(egress.AlwaysBlocked), spansOf(m.cfg.Egress.Open))
	return merge(append(b, spansOf([]netip.Prefix{m.cfg.Subnet})...))
}
