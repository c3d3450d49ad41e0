// Package fdlimit derives the daemon's bounds on what holds its file
// descriptors from the process's descriptor limit, and counts the holders
// by sandbox, team and in all. Every path a sandbox can make the daemon
// open descriptors on (client connections, the proxy's forwarded requests,
// the egress guard's and tunnel's connections) is bounded from the same
// limit, so that no tenant can take the daemon to EMFILE for the others:
// past it the daemon can accept nothing and reap no sandbox.
package fdlimit

import (
	"sync"
	"syscall"
)

// maxDescriptors caps what Descriptors reports: past it the bounds are
// high enough for any load this daemon serves, and a limit of millions
// (systemd's LimitNOFILE) would bound nothing.
const maxDescriptors = 65536

// Descriptors is the process's descriptor limit (RLIMIT_NOFILE's soft
// value, which Go raises to the hard one at start), at most 65536.
func Descriptors() int {
	var rl syscall.Rlimit
	n := uint64(maxDescriptors)
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 && rl.Cur < n {
		n = rl.Cur
	}
	return int(n)
}

// Limits bounds holders at once: per sandbox, per team and in all (0:
// unlimited).
type Limits struct {
	PerSandbox, PerTeam, Total int
}

// Counter counts holders by sandbox, team and in all against its Limits.
// The zero Counter admits everything; it is safe for concurrent use.
type Counter struct {
	lim               Limits
	mu                sync.Mutex // guards the counts
	bySandbox, byTeam map[string]int
	total             int
}

// NewCounter counts against l.
func NewCounter(l Limits) *Counter {
	return &Counter{lim: l, bySandbox: map[string]int{}, byTeam: map[string]int{}}
}

// Admit counts one holder of sandbox sb of team; ok is false (nothing
// counted) past a bound, else release must be called once when it ends.
func (c *Counter) Admit(sb, team string) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lim
	if past(l.PerSandbox, c.bySandbox[sb]) || past(l.PerTeam, c.byTeam[team]) || past(l.Total, c.total) {
		return nil, false
	}
	if c.bySandbox == nil {
		c.bySandbox, c.byTeam = map[string]int{}, map[string]int{}
	}
	c.bySandbox[sb]++
	c.byTeam[team]++
	c.total++
	var once sync.Once
	return func() { once.Do(func() { c.release(sb, team) }) }, true
}

func (c *Counter) release(sb, team string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	dec(c.bySandbox, sb)
	dec(c.byTeam, team)
}

// Total is the holders counted in all.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

func past(limit, have int) bool { return limit > 0 && have >= limit }

func dec(m map[string]int, k string) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}
