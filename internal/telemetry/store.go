package telemetry

import (
	"sort"
	"sync"
	"time"
)

// Store holds every sandbox's history and the teams' series. It is safe for
// concurrent use: mu guards everything below it, and no method calls out
// while holding it.
type Store struct {
	lim    Limits
	now    func() time.Time
	agents *agentReader // has its own lock

	mu     sync.Mutex
	sbx    map[string]*record
	teams  map[string]*ring[TeamSample]
	starts map[string]int // per team, sandboxes started since its last sample
}

// record is one sandbox's history.
type record struct {
	team    string
	created time.Time
	ended   time.Time // zero while the sandbox exists
	samples *ring[Sample]
	logs    *ring[Entry]
}

// New returns an empty store bounded by lim.
func New(lim Limits) *Store {
	return &Store{lim: lim, now: time.Now, agents: newAgentReader(), sbx: map[string]*record{},
		teams: map[string]*ring[TeamSample]{}, starts: map[string]int{}}
}

// recordLocked returns id's record, making it (in DefaultTeam) if unknown.
func (s *Store) recordLocked(id string) *record {
	r, ok := s.sbx[id]
	if !ok {
		r = &record{team: DefaultTeam, created: s.now(), samples: newRing[Sample](s.lim.Samples), logs: newRing[Entry](s.lim.Logs)}
		s.sbx[id] = r
	}
	return r
}

// Log appends e (bounded, see Entry.clean) to sandbox id's log.
func (s *Store) Log(id string, e Entry) {
	e = e.clean()
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(id).logs.push(e)
}

// Record appends a metrics sample of sandbox id.
func (s *Store) Record(id string, smp Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(id).samples.push(smp)
}

// Started notes that sandbox id of team began (counts towards its start rate).
func (s *Store) Started(id, team string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recordLocked(id)
	r.team, r.ended = team, time.Time{}
	s.starts[team]++
}

// setTeam records the team of sandbox id (re-adopted after a restart).
func (s *Store) setTeam(id, team string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(id).team = team
}

// TeamOfSandbox returns the team of sandbox id's history; false if the
// store holds none.
func (s *Store) TeamOfSandbox(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.sbx[id]
	if !ok {
		return "", false
	}
	return r.team, true
}

// Ended notes that sandbox id is gone: its history is kept for Limits.Retain.
func (s *Store) Ended(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.sbx[id]; ok && r.ended.IsZero() {
		r.ended = s.now()
	}
}

// Known reports whether the store holds a history of sandbox id.
func (s *Store) Known(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sbx[id]
	return ok
}

// Samples returns sandbox id's samples within w, oldest first; false if
// the store holds no history of id.
func (s *Store) Samples(id string, w Window) ([]Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.sbx[id]
	if !ok {
		return nil, false
	}
	return inWindow(r.samples, w, func(v Sample) time.Time { return v.Time }), true
}

// Latest returns sandbox id's newest sample.
func (s *Store) Latest(id string) (Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.sbx[id]; ok {
		return r.samples.last()
	}
	return Sample{}, false
}

// Logs returns sandbox id's entries selected by q; false if unknown.
func (s *Store) Logs(id string, q LogQuery) ([]Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.sbx[id]
	if !ok {
		return nil, false
	}
	return q.query(r.logs), true
}

// Team returns team's samples within w, oldest first.
func (s *Store) Team(team string, w Window) []TeamSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.teams[team]
	if !ok {
		return []TeamSample{}
	}
	return inWindow(r, w, func(v TeamSample) time.Time { return v.Time })
}

// MaxTeam returns the largest value of metric m among team's samples within
// w and the time of its first occurrence; ok is false if m is unknown. With
// no samples in w the value is 0 at w's end (or now).
func (s *Store) MaxTeam(team string, m TeamMetric, w Window) (v float64, at time.Time, ok bool) {
	if _, ok := m.value(TeamSample{}); !ok {
		return 0, time.Time{}, false
	}
	at = w.End
	if at.IsZero() {
		at = s.now()
	}
	for i, smp := range s.Team(team, w) {
		if x, _ := m.value(smp); i == 0 || x > v {
			v, at = x, smp.Time
		}
	}
	return v, at, true
}

// tickTeams appends one sample per team at t: running counts the team's
// sandboxes running now; the start rate is the starts since the last tick
// over step.
func (s *Store) tickTeams(t time.Time, running map[string]int, step time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	teams := map[string]bool{DefaultTeam: true}
	for k := range running {
		teams[k] = true
	}
	for k := range s.starts {
		teams[k] = true
	}
	for team := range teams {
		r, ok := s.teams[team]
		if !ok {
			r = newRing[TeamSample](s.lim.TeamKeep)
			s.teams[team] = r
		}
		r.push(TeamSample{Time: t, Concurrent: running[team], StartRate: float64(s.starts[team]) / step.Seconds()})
	}
	clear(s.starts)
}

// gc drops ended sandboxes past Limits.Retain, then the oldest-ended ones
// beyond Limits.MaxEnded.
func (s *Store) gc() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cut := s.now().Add(-s.lim.Retain)
	var ended []string
	for id, r := range s.sbx {
		switch {
		case r.ended.IsZero():
		case r.ended.Before(cut):
			delete(s.sbx, id)
		default:
			ended = append(ended, id)
		}
	}
	if extra := len(ended) - s.lim.MaxEnded; extra > 0 {
		sort.Slice(ended, func(i, j int) bool { return s.sbx[ended[i]].ended.Before(s.sbx[ended[j]].ended) })
		for _, id := range ended[:extra] {
			delete(s.sbx, id)
		}
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
