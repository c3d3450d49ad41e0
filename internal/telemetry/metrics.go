package telemetry

import "time"

// Sample is one metrics point of a sandbox, E2B's SandboxMetric.
type Sample struct {
	Time       time.Time // aligned to Step
	CPUCount   int
	CPUUsedPct float64
	MemUsed    int64
	MemTotal   int64
	MemCache   int64
	DiskUsed   int64
	DiskTotal  int64
}

// TeamSample is one point of a team's series, E2B's TeamMetric.
type TeamSample struct {
	Time       time.Time
	Concurrent int     // sandboxes running at Time
	StartRate  float64 // sandboxes started per second over the Step before Time
}

// Window is a closed time range; a zero bound is open.
type Window struct{ Start, End time.Time }

// Contains reports whether t is within w.
func (w Window) Contains(t time.Time) bool {
	return (w.Start.IsZero() || !t.Before(w.Start)) && (w.End.IsZero() || !t.After(w.End))
}

// inWindow returns the elements of r within w, oldest first.
func inWindow[T any](r *ring[T], w Window, at func(T) time.Time) []T {
	out := []T{}
	for i := range r.len() {
		if v := r.at(i); w.Contains(at(v)) {
			out = append(out, v)
		}
	}
	return out
}

// TeamMetric names a series of TeamSample, for MaxTeam.
type TeamMetric string

// The team metrics E2B's /teams/{id}/metrics/max knows.
const (
	ConcurrentSandboxes TeamMetric = "concurrent_sandboxes"
	SandboxStartRate    TeamMetric = "sandbox_start_rate"
)

func (m TeamMetric) value(s TeamSample) (float64, bool) {
	switch m {
	case ConcurrentSandboxes:
		return float64(s.Concurrent), true
	case SandboxStartRate:
		return s.StartRate, true
	}
	return 0, false
}
