package daemon

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/telemetry"
)

// telemetrySource shows the manager's running sandboxes to the collector.
type telemetrySource struct{ mgr *sandbox.Manager }

func (s telemetrySource) Targets() []telemetry.Target {
	var out []telemetry.Target
	for _, in := range s.mgr.List() {
		if in.State != store.StateRunning {
			continue
		}
		tg := telemetry.Target{ID: in.ID, Team: telemetry.TeamOf(in.Team), CPUCount: in.CPUCount,
			MemTotal: int64(in.MemoryMB) << 20, DiskTotal: int64(in.DiskSizeMB) << 20, Token: in.EnvdToken}
		if in.AgentAddr != "" {
			tg.Agent = "http://" + in.AgentAddr
		}
		out = append(out, tg)
	}
	return out
}

func (s telemetrySource) Counters(id string) (telemetry.Counters, error) {
	c, err := s.mgr.Counters(id)
	return telemetry.Counters(c), err
}

// runTelemetry samples the manager's sandboxes into tel until ctx ends.
func runTelemetry(ctx context.Context, tel *telemetry.Store, mgr *sandbox.Manager, log *slog.Logger) {
	telemetry.NewCollector(tel, telemetrySource{mgr}, log).Run(ctx)
}

// openTelemetry returns the store with what the last clean shutdown saved
// in dataDir, and the function that saves it again (call it on shutdown).
func openTelemetry(dataDir string, log *slog.Logger) (*telemetry.Store, func()) {
	path := filepath.Join(dataDir, telemetry.FileName)
	tel := telemetry.New(telemetry.DefaultLimits)
	if err := tel.Load(path); err != nil {
		log.Warn("sandbox metrics and logs start afresh", "err", err)
	}
	return tel, func() {
		if err := tel.Save(path); err != nil {
			log.Warn("cannot save sandbox metrics and logs", "err", err)
		}
	}
}

// liveIDs are the sandboxes the manager holds (after Recover).
func liveIDs(mgr *sandbox.Manager) map[string]bool {
	live := map[string]bool{}
	for _, in := range mgr.List() {
		live[in.ID] = true
	}
	return live
}
