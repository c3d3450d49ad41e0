package integration

import (
	"os"
	"os/exec"
	"testing"

	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

// TestMain stops the throwaway PostgreSQL the cluster tests start, if any,
// and deletes the nftables tables the tests' daemons leave: a daemon keeps
// its table when it stops (sandboxes that outlive it stay fenced off the
// host), so no test can tell it is the last to use a prefix. Every daemon of
// the run has stopped by then.
func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	dropTables()
	os.Exit(code)
}

// dropTables deletes the tables of the harness's prefix and the cluster
// nodes' (startClusterNode), quietly: most runs make only some of them.
func dropTables() {
	p := envOr("SBX_IT_NET_PREFIX", "sbi")
	for _, t := range []string{p, clusterPrefix(p, 1), clusterPrefix(p, 2), clusterPrefix(p, 3)} {
		_ = exec.Command("nft", "delete", "table", "inet", t).Run()
	}
}
