package daemon

import (
	"flag"

	"github.com/sbx-dev/sbx/internal/store"
)

// teamQuotaFlags registers the per-team quota defaults (0 = unlimited; a
// team's own quota, set with PATCH /sbx/teams/{id}, wins). The default
// (admin) team has no quota.
func teamQuotaFlags(fs *flag.FlagSet, q *store.Quota) {
	fs.IntVar(&q.Sandboxes, "team-max-sandboxes", 0, "per team: live (not paused) sandboxes at once; 0 = unlimited")
	fs.IntVar(&q.VCPU, "team-max-vcpu", 0, "per team: vCPUs summed over live sandboxes; 0 = unlimited")
	fs.IntVar(&q.MemoryMB, "team-max-memory-mb", 0, "per team: memory summed over live sandboxes, MiB; 0 = unlimited")
	fs.Float64Var(&q.CreatesPerSec, "team-creates-per-sec", 0, "per team: sandbox creates (and forks, resumes) a second, burst max(1, rate); 0 = unlimited")
	fs.IntVar(&q.Builds, "team-max-builds", 0, "per team: template builds waiting or running at once; 0 = unlimited")
	fs.Int64Var(&q.DiskMB, "team-max-disk-mb", 0, "per team: MiB held by volumes, snapshots, paused sandboxes and templates (their layers and uploaded files); 0 = unlimited")
}
