package api

import "time"

// SetMaxTemplatesPerTeam sets maxTemplatesPerTeam for a test and returns
// the function that puts it back.
func SetMaxTemplatesPerTeam(n int) (restore func()) {
	old := maxTemplatesPerTeam
	maxTemplatesPerTeam = n
	return func() { maxTemplatesPerTeam = old }
}

// FreezeLimits stops the clock of s's rate limiters (those set so far:
// call it after SetTeamRate) at now: a flood then meets exactly its
// bucket's burst however long a loaded machine takes to send it (its
// refill during the flood made the counts a test saw vary with the load).
func (s *Server) FreezeLimits() {
	at := time.Now()
	now := func() time.Time { return at }
	s.unauthLim.SetClock(now)
	if s.teamLim != nil {
		s.teamLim.SetClock(now)
	}
}
