package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/sbx-dev/sbx/internal/network"
)

// netHealEvery is how often the daemon checks that its nftables table is
// still there (one netlink request). Between a removal and the check every
// sandbox link is unfenced; a create meanwhile heals at once.
const netHealEvery = 5 * time.Second

// runNetHeal rebuilds the nftables table whenever it is found gone, until
// ctx ends (network.Manager.Heal logs and counts each rebuild).
func runNetHeal(ctx context.Context, nw *network.Manager, log *slog.Logger) {
	t := time.NewTicker(netHealEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := nw.Heal(ctx); err != nil {
			log.Error("nftables table check", "err", err)
		}
	}
}
