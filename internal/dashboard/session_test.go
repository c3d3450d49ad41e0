package dashboard

import (
	"testing"
	"time"
)

// TestTeamSessionsBounded: a team holds at most maxTeamSessions sessions;
// a sign-in past it ends the team's oldest (so a legitimate sign-in always
// works), and other teams' sessions are untouched. Before, sessions were
// unbounded and every sign-in swept all of them under the lock each
// dashboard request takes.
func TestTeamSessionsBounded(t *testing.T) {
	s := newSessions(time.Hour, 30*time.Minute)
	now := time.Unix(1_000_000, 0)
	s.now = func() time.Time { now = now.Add(time.Millisecond); return now }
	other, _ := s.create("key-b", "team-b")
	var ids []string
	for range maxTeamSessions + 10 {
		id, _ := s.create("key-a", "team-a")
		ids = append(ids, id)
	}
	for i, id := range ids {
		_, ok := s.lookup(id, false)
		if want := i >= 10; ok != want {
			t.Fatalf("session %d of %d: live %v, want %v", i, len(ids), ok, want)
		}
	}
	if _, ok := s.lookup(other, false); !ok {
		t.Fatal("another team's session was ended")
	}
	if len(s.m) != maxTeamSessions+1 {
		t.Fatalf("%d sessions held, want %d", len(s.m), maxTeamSessions+1)
	}
}
