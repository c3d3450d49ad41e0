package daemon

import (
	"testing"

	"github.com/sbx-dev/sbx/internal/proxy"
)

// TestEgressLimits: the descriptors the daemon's bounded paths may hold
// together (client connections, the proxy's upstream and idle
// connections, the egress guard's and tunnel's six each) leave at least a
// sixteenth of the limit for the database, runtimes and reaping, and one
// team's egress stays within half its share.
func TestEgressLimits(t *testing.T) {
	for _, n := range []int{4096, 6000, 20000, 65536} {
		eg := egressLimits(n)
		px := proxy.LimitsFor(n)
		used := n/2 + px.Total + proxy.Idle(px) + egressConnFDs*eg.Total
		if used > n-n/16 {
			t.Errorf("%d descriptors: bounded paths may hold %d", n, used)
		}
		if eg.PerTeam <= 0 || eg.PerTeam > eg.Total/2 {
			t.Errorf("%d descriptors: egress per team %d of %d", n, eg.PerTeam, eg.Total)
		}
	}
}

// TestEgressAdmitShared: the guard's and tunnel's connections draw on one
// count: a team's connections through either stop at its bound, and
// another team is still admitted.
func TestEgressAdmitShared(t *testing.T) {
	teams := map[string]string{"g1": "A", "t1": "A", "t2": "A", "b": "B"}
	admit := egressAdmit(egressLimits(1024), func(sb string) string { return teams[sb] })
	per := egressLimits(1024).PerTeam
	for i := range per {
		sb := "g1"
		if i%2 == 1 {
			sb = "t1"
		}
		if _, ok := admit(sb); !ok {
			t.Fatalf("connection %d of team A refused under its bound %d", i, per)
		}
	}
	if _, ok := admit("t2"); ok {
		t.Errorf("team A admitted past its bound %d", per)
	}
	if _, ok := admit("b"); !ok {
		t.Error("team B refused while A holds its share")
	}
}
