package proxy

import "github.com/sbx-dev/sbx/internal/fdlimit"

// Open requests are bounded: each holds a client connection and one to the
// sandbox (two descriptors) for as long as the sandbox's server keeps it,
// with no timeout (streams run as long as their process). Before, a server
// in a sandbox that accepted and never answered let its tenant (or anyone,
// on a public port) hold 12,000 requests through the proxy (12,000
// descriptors, 470 MB of the daemon's memory); past the descriptor limit
// the daemon can accept nothing and reap no sandbox, for every tenant.

// Limits bounds the requests the proxy forwards at once: per sandbox, per
// team and in all (0: unlimited). Past one, a request gets 429 with
// Retry-After before anything is dialled.
type Limits = fdlimit.Limits

// DefaultLimits derives the bounds from the process's descriptor limit
// (fdlimit.Descriptors): forwarded requests may hold at most half the
// descriptors (two each), one team at most half of that, one sandbox at
// most 1024 of its team's; the connections kept idle between requests one
// sixteenth (Idle).
func DefaultLimits() Limits { return LimitsFor(fdlimit.Descriptors()) }

// LimitsFor is DefaultLimits for a limit of n descriptors.
func LimitsFor(n int) Limits {
	total := max(n/4, 64)
	return Limits{PerSandbox: min(1024, total/2), PerTeam: total / 2, Total: total}
}

// SetLimits bounds the requests forwarded at once, and the connections
// kept to sandboxes between requests (Idle). Call before serving.
func (p *Proxy) SetLimits(l Limits) {
	p.open = fdlimit.NewCounter(l)
	p.tr.MaxIdleConns = Idle(l)
}

// minIdle is the fewest idle connections the proxy keeps to sandboxes in
// all (a port keeps at most 16).
const minIdle = 16

// Idle bounds the connections kept to sandboxes between requests, in all:
// a quarter of l.Total, at least minIdle. Past it the longest idle is
// closed. Each sandbox port has a pool of its own (up to 16 connections,
// kept 30 s), so without a bound in all a sandbox serving on many ports,
// asked for one after another, held a descriptor of the daemon per port:
// 20,000 ports took the daemon to EMFILE, for every tenant. Requests in
// flight are bounded by Total; these come on top.
func Idle(l Limits) int {
	if l.Total <= 0 {
		return minIdle * 64
	}
	return max(l.Total/4, minIdle)
}

// admit counts a request to sandbox sb of team; ok is false past a bound,
// else release must be called when the request ends.
func (p *Proxy) admit(sb, team string) (release func(), ok bool) {
	return p.open.Admit(sb, team)
}
