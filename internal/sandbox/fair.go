package sandbox

// Fair admission: starts waiting for create slots queue per team, and freed
// slots go to the next team in turn (round robin), first come first served
// within a team. All of it is guarded by Manager.mu; the semaphore is only
// ever taken with TryAcquire, so its own queue stays empty.

// waiter is one start waiting for w slots; ch is closed when it is granted.
type waiter struct {
	team    string
	w       int64
	ch      chan struct{}
	granted bool
	evicted bool // its place went to another team's start (ch closed too)
}

// fairQueue holds the waiters per team and the teams' turn order.
type fairQueue struct {
	byTeam map[string][]*waiter
	ring   []string // teams with waiters; the first is served next
}

func (q *fairQueue) empty() bool { return len(q.ring) == 0 }

func (q *fairQueue) push(w *waiter) {
	if q.byTeam == nil {
		q.byTeam = map[string][]*waiter{}
	}
	if len(q.byTeam[w.team]) == 0 {
		q.ring = append(q.ring, w.team)
	}
	q.byTeam[w.team] = append(q.byTeam[w.team], w)
}

// next is the waiter whose turn it is (nil if none).
func (q *fairQueue) next() *waiter {
	if q.empty() {
		return nil
	}
	return q.byTeam[q.ring[0]][0]
}

// pop takes the oldest waiter of the team whose turn it is; that team goes
// to the back of the ring if it has more.
func (q *fairQueue) pop() *waiter {
	if q.empty() {
		return nil
	}
	t := q.ring[0]
	q.ring = q.ring[1:]
	ws := q.byTeam[t]
	w := ws[0]
	if len(ws) > 1 {
		q.byTeam[t] = ws[1:]
		q.ring = append(q.ring, t)
	} else {
		delete(q.byTeam, t)
	}
	return w
}

// remove drops a waiter that gave up.
func (q *fairQueue) remove(w *waiter) {
	ws := q.byTeam[w.team]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) > 0 {
		q.byTeam[w.team] = ws
		return
	}
	delete(q.byTeam, w.team)
	for i, t := range q.ring {
		if t == w.team {
			q.ring = append(q.ring[:i:i], q.ring[i+1:]...)
			break
		}
	}
}

// takeOrQueue takes w free slots at once when nobody is queued (nil), or
// queues a waiter for team and returns it.
func (m *Manager) takeOrQueue(team string, w int64) *waiter {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fair.empty() && m.slots.TryAcquire(w) {
		return nil
	}
	wt := &waiter{team: team, w: w, ch: make(chan struct{})}
	m.fair.push(wt)
	return wt
}

// handoff gives freed slots to the waiters in turn while they fit. The
// waiter whose turn it is waits for enough slots: a lighter one behind it
// does not overtake it (no starvation of costly starts).
func (m *Manager) handoff() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for wt := m.fair.next(); wt != nil && m.slots.TryAcquire(wt.w); wt = m.fair.next() {
		m.fair.pop()
		wt.granted = true
		close(wt.ch)
	}
}

// evictLocked makes room in a full queue for a start of team: the newest
// waiter of the team holding the most waiters is refused, if that team
// holds more than team would after queueing. m.mu is held.
func (m *Manager) evictLocked(team string) bool {
	big, n := "", -1
	for t, ws := range m.fair.byTeam {
		if len(ws) > n {
			big, n = t, len(ws)
		}
	}
	if n <= len(m.fair.byTeam[team])+1 {
		return false
	}
	ws := m.fair.byTeam[big]
	v := ws[len(ws)-1]
	m.fair.remove(v)
	v.evicted = true
	close(v.ch)
	return true
}

// abandon removes a waiter that gave up; it reports whether the waiter had
// been granted a slot meanwhile (the caller then owns it and must release).
func (m *Manager) abandon(w *waiter) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.granted {
		return true
	}
	m.fair.remove(w)
	return false
}
