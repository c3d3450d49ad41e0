package telemetry

// lifecycleMessages turns the manager's event names into log messages.
var lifecycleMessages = map[string]string{
	"created":  "Sandbox created",
	"killed":   "Sandbox killed",
	"paused":   "Sandbox paused",
	"resumed":  "Sandbox resumed",
	"adopted":  "Sandbox re-adopted after a daemon restart",
	"reaped":   "Sandbox could not be re-adopted and was removed",
	"snapshot": "Snapshot taken",
	"network":  "Network policy updated",
	// A timed-out autoPause sandbox whose pause was refused for want of
	// disk (sandbox.Manager's deferPause, abandonPause).
	"pause-deferred":  "Sandbox timed out but its pause was refused for want of disk: it keeps running and the pause is retried",
	"pause-abandoned": "Sandbox pause still refused for want of disk at the end of its retries: it is killed",
}

// LifecycleLogger is the logger name of lifecycle entries.
const LifecycleLogger = "lifecycle"

// Event records a lifecycle event of sandbox id (sandbox.EventSink): a log
// entry, and for "created" a start, for "killed"/"reaped" the end. A kill
// by the deadline reads "Sandbox killed: timeout".
func (s *Store) Event(id, what string, fields map[string]string) {
	msg, ok := lifecycleMessages[what]
	if !ok {
		msg = "Sandbox " + what
	}
	lvl := Info
	switch what {
	case "created":
		s.Started(id, TeamOf(fields["team"]))
	case "adopted":
		s.setTeam(id, TeamOf(fields["team"]))
	case "killed":
		if r := fields["reason"]; r != "" {
			msg += ": " + r
		}
	case "reaped", "pause-deferred", "pause-abandoned":
		lvl = Warn
	}
	f := map[string]string{"event": what}
	for k, v := range fields {
		f[k] = v
	}
	s.Log(id, Entry{Level: lvl, Logger: LifecycleLogger, Message: msg, Fields: f})
	if what == "killed" || what == "reaped" {
		s.Ended(id)
	}
}
