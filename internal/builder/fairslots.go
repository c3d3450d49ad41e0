package builder

import (
	"context"
	"sync"
)

// fairSlots hands out build slots round robin across teams, first come
// first served within a team: a team with many builds waiting holds back
// no other team's build by more than one build of its own per turn. All
// fields are guarded by mu.
type fairSlots struct {
	mu     sync.Mutex
	free   int
	byTeam map[string][]chan struct{} // waiters per team, oldest first
	ring   []string                   // teams with waiters; the first is served next
}

func newFairSlots(n int) *fairSlots {
	return &fairSlots{free: n, byTeam: map[string][]chan struct{}{}}
}

// acquire takes a slot for team, waiting for its turn; it fails only with
// ctx's error, holding no slot then.
func (f *fairSlots) acquire(ctx context.Context, team string) error {
	f.mu.Lock()
	if f.free > 0 && len(f.ring) == 0 {
		f.free--
		f.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	if len(f.byTeam[team]) == 0 {
		f.ring = append(f.ring, team)
	}
	f.byTeam[team] = append(f.byTeam[team], ch)
	f.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	f.mu.Lock()
	waiting := f.remove(team, ch)
	f.mu.Unlock()
	if !waiting { // granted as ctx ended: pass the slot on
		f.release()
	}
	return ctx.Err()
}

// release frees a slot: it goes to the oldest waiter of the team whose turn
// it is, and that team goes to the back of the ring if it has more.
func (f *fairSlots) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ring) == 0 {
		f.free++
		return
	}
	t := f.ring[0]
	f.ring = f.ring[1:]
	q := f.byTeam[t]
	if len(q) > 1 {
		f.byTeam[t] = q[1:]
		f.ring = append(f.ring, t)
	} else {
		delete(f.byTeam, t)
	}
	close(q[0])
}

// remove drops team's waiter ch; false when it is no longer waiting (it
// was granted a slot). f.mu must be held.
func (f *fairSlots) remove(team string, ch chan struct{}) bool {
	q := f.byTeam[team]
	i := 0
	for i < len(q) && q[i] != ch {
		i++
	}
	if i == len(q) {
		return false
	}
	if q = append(q[:i:i], q[i+1:]...); len(q) > 0 {
		f.byTeam[team] = q
		return true
	}
	delete(f.byTeam, team)
	for j, t := range f.ring {
		if t == team {
			f.ring = append(f.ring[:j:j], f.ring[j+1:]...)
			break
		}
	}
	return true
}
