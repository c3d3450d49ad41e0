package daemon

import (
	"github.com/sbx-dev/sbx/internal/fdlimit"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// egressLimits bounds the connections the egress guard and tunnel hold at
// once, together: each holds two of the daemon's descriptors (the
// sandbox's side and the upstream), so in all an eighth of the descriptor
// limit (a sixteenth in connections), one team half of that. The guard's
// and tunnel's per-sandbox bounds (256, --egress-max-conns) come on top.
// With the listeners' half and the proxy's upstream quarter and idle
// sixteenth, a sixteenth stays for the database, runtimes and reaping.
// Before, the guard and tunnel were bounded per sandbox only: about 40
// sandboxes of one team holding connections open to a server of theirs
// would take the daemon to EMFILE, for every tenant.
func egressLimits(descriptors int) fdlimit.Limits {
	total := max(descriptors/16, 64)
	return fdlimit.Limits{PerTeam: total / 2, Total: total}
}

// teamOf names a sandbox's team for the egress bound; a sandbox the
// manager does not know (gone meanwhile) counts as a team of its own.
type teamOf func(sandbox string) string

func managerTeams(mgr *sandbox.Manager) teamOf {
	return func(sb string) string {
		in, err := mgr.Get(sb)
		if err != nil {
			return "sandbox:" + sb
		}
		return in.Team
	}
}

// egressAdmit is the guard's and tunnel's shared Admit: one count of
// their connections by team and in all.
func egressAdmit(l fdlimit.Limits, team teamOf) func(sb string) (func(), bool) {
	c := fdlimit.NewCounter(l)
	return func(sb string) (func(), bool) { return c.Admit(sb, team(sb)) }
}
