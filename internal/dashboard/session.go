package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// session is one signed-in browser. The API key lives here, on the server
// only: the browser holds an opaque id in an HttpOnly cookie and the CSRF
// token it must echo on every state-changing request.
type session struct {
	key     string // the API key signed in with; sent to the API as X-API-Key
	team    string // the key's team id, as the API shows it
	csrf    string
	expires time.Time // absolute: a session is never extended past it
	idleAt  time.Time // the session ends if unused until then
}

// sessions maps sha256(cookie value) to sessions: a dump of the map holds
// no usable cookie. mu guards m only; no I/O happens under it.
type sessions struct {
	mu        sync.Mutex
	m         map[[32]byte]*session
	ttl, idle time.Duration
	now       func() time.Time
}

func newSessions(ttl, idle time.Duration) *sessions {
	return &sessions{m: map[[32]byte]*session{}, ttl: ttl, idle: idle, now: time.Now}
}

// maxTeamSessions bounds a team's sessions: a sign-in past it ends the
// team's oldest. Sign-ins with a valid key are not rate limited, and every
// sign-in swept the whole map under mu: before, one team's 40,000 sign-ins
// (31 s) made each next one 1.1 ms of the lock every dashboard request
// takes, growing with each, and held 25 MiB for up to 30 minutes.
const maxTeamSessions = 256

// create starts a session for key and returns its cookie value; past
// maxTeamSessions the team's oldest session ends.
func (s *sessions) create(key, team string) (id string, sess *session) {
	id, csrf := randomToken(), randomToken()
	now := s.now()
	sess = &session{key: key, team: team, csrf: csrf, expires: now.Add(s.ttl), idleAt: now.Add(s.idle)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	s.boundTeamLocked(team)
	s.m[sha256.Sum256([]byte(id))] = sess
	return id, sess
}

// boundTeamLocked ends team's oldest sessions until it has room for one
// more under maxTeamSessions.
func (s *sessions) boundTeamLocked(team string) {
	for {
		n, oldest, first := 0, [32]byte{}, time.Time{}
		for h, sess := range s.m {
			if sess.team != team {
				continue
			}
			n++
			if first.IsZero() || sess.expires.Before(first) {
				oldest, first = h, sess.expires
			}
		}
		if n < maxTeamSessions {
			return
		}
		delete(s.m, oldest)
	}
}

// lookup returns the live session of cookie value id; with use it marks
// it used (its idle time starts again). An expired one is removed and not
// returned.
func (s *sessions) lookup(id string, use bool) (session, bool) {
	if id == "" {
		return session{}, false
	}
	h := sha256.Sum256([]byte(id))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[h]
	if !ok {
		return session{}, false
	}
	if !now.Before(sess.expires) || !now.Before(sess.idleAt) {
		delete(s.m, h)
		return session{}, false
	}
	if use {
		sess.idleAt = now.Add(s.idle)
	}
	return *sess, true
}

// remove ends the session of cookie value id (sign out).
func (s *sessions) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

// sweepLocked drops expired sessions so that abandoned ones do not pile up.
func (s *sessions) sweepLocked(now time.Time) {
	for h, sess := range s.m {
		if !now.Before(sess.expires) || !now.Before(sess.idleAt) {
			delete(s.m, h)
		}
	}
}

// randomToken is 32 random bytes, URL-safe base64.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand since Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}
