package guard

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/fdlimit"
)

// TestGuardSharedBound: connections are counted by Admit (the daemon's
// bound by team and in all, shared with the tunnel) besides the guard's
// per-sandbox bound: sandboxes of one team, each far under its own 256,
// are refused past the team's bound, and a closed connection gives its
// count back. Before, the guard bounded per sandbox only: about 40
// sandboxes of one team could hold 20,000 of the daemon's descriptors.
func TestGuardSharedBound(t *testing.T) {
	cnt := fdlimit.NewCounter(fdlimit.Limits{PerTeam: 2, Total: 3})
	var n atomic.Int32
	e := startGuard(t, guardSetup{policy: allowExample(t), dst: resolvedIP + ":443", resolved: resolvedExample(),
		mod: func(g *Guard) {
			lookup := g.Lookup
			g.Lookup = func(src netip.Addr) (string, egress.Policy, bool) { // a sandbox per connection
				_, p, ok := lookup(src)
				return fmt.Sprintf("sb%d", n.Add(1)), p, ok
			}
			g.Admit = func(sb string) (func(), bool) { return cnt.Admit(sb, "team-a") }
		}})
	first := e.dial(t)
	e.dial(t)
	waitTotal(t, cnt, 2)
	third := e.dial(t)
	b := e.wantBlocked(t, ReasonTooMany)
	wantClosed(t, third)
	e.g.mu.Lock()
	held := e.g.conns[b.sandbox]
	e.g.mu.Unlock()
	if held != 0 {
		t.Errorf("refused sandbox %s still counted: %d", b.sandbox, held)
	}
	first.Close()
	waitTotal(t, cnt, 1)
	e.dial(t)
	waitTotal(t, cnt, 2)
}

// waitTotal waits until c counts n holders in all.
func waitTotal(t *testing.T, c *fdlimit.Counter, n int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if c.Total() == n {
			return
		}
	}
	t.Fatalf("counted %d connections, want %d", c.Total(), n)
}
