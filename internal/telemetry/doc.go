// Package telemetry keeps what E2B's observability API serves about
// sandboxes: a bounded history of resource samples per sandbox (CPU, memory,
// disk at Step granularity), the team's concurrency and start rate, and a
// bounded log per sandbox (lifecycle events, the commands its agent ran and
// how they ended, the agent's own log lines).
//
// Everything lives in memory and is bounded: Limits states the bounds. A
// sandbox's history is kept for Limits.Retain after it ends (at most
// Limits.MaxEnded ended sandboxes), so metrics and logs of a killed sandbox
// can still be read; a daemon restart starts the history afresh.
//
// Records carry their sandbox's team (the "team" field of its created and
// adopted events); the API serves a sandbox's history to its team only.
package telemetry

import "time"

// DefaultTeam is the id of the default team (the admin keys' team, whose
// records carry the team "").
const DefaultTeam = "00000000-0000-4000-8000-00000000e2b0"

// TeamOf is the public id of a record's team ("" is DefaultTeam).
func TeamOf(team string) string {
	if team == "" {
		return DefaultTeam
	}
	return team
}

// Step is E2B's metrics granularity: one sample per sandbox every Step.
const Step = 5 * time.Second

// Limits bounds what a Store holds.
type Limits struct {
	Samples  int           // metric samples per sandbox (Samples×Step of history)
	Logs     int           // log entries per sandbox
	TeamKeep int           // team samples (TeamKeep×Step of history)
	Retain   time.Duration // how long an ended sandbox's history is kept
	MaxEnded int           // ended sandboxes kept at most (oldest dropped first)
}

// DefaultLimits: 2 h of samples and 1000 log entries per sandbox, 24 h of
// team samples, ended sandboxes kept 2 h (at most 500 of them). An entry is
// at most MaxMessage bytes of message plus MaxFields fields of at most
// MaxField bytes, so a sandbox's log holds at most about 2.5 MiB.
var DefaultLimits = Limits{Samples: 1440, Logs: 1000, TeamKeep: 17280, Retain: 2 * time.Hour, MaxEnded: 500}
