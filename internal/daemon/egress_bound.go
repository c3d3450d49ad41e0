package daemon

import (
	"github.com/sbx-dev/sbx/internal/fdlimit"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// egressConnFDs is what one connection through the egress guard or
// tunnel may hold of the daemon's descriptors: the sandbox's socket, the
// upstream's, and a splice(2) pipe (two descriptors) per direction while
// the bytes are copied (io.Copy between TCP connections; measured: 128
// held connections, 770 descriptors).
const egressConnFDs = 6

// egressLimits bounds the connections the egress guard and tunnel hold at
// once, together: in all an eighth of the descriptor limit
// (egressConnFDs each, at least 64 connections), one team half of that.
// The guard's and tunnel's per-sandbox bounds (256, --egress-max-conns)
// come on top. With the listeners' half and the proxy's upstream quarter
// and idle sixteenth, a sixteenth stays for the database, runtimes and
// reaping. Before, the guard and tunnel were bounded per sandbox only:
// two sandboxes of one team held 200 connections and 770 descriptors of a
// daemon limited to 4,096, and about 15 sandboxes could take this host's
// 20,000 (EMFILE, for every tenant).
func egressLimits(descriptors int) fdlimit.Limits {
	total := max(descriptors/8/egressConnFDs, 64)
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
