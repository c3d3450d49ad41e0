package daemon

import (
	"log/slog"

	"github.com/sbx-dev/sbx/internal/sdnotify"
)

// notifySystemd tells systemd (a unit of Type=notify, see sbx service) the
// daemon's state; outside systemd it does nothing. A failure is logged, not
// fatal: systemd then times the start out on its own.
func notifySystemd(state string, log *slog.Logger) {
	sent, err := sdnotify.Notify(state)
	switch {
	case err != nil:
		log.Warn("cannot notify systemd", "state", state, "err", err)
	case sent:
		log.Debug("notified systemd", "state", state)
	}
}
