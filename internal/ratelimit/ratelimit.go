// Package ratelimit is a token bucket per caller for the daemon's shared
// services (the API, the DNS filter), with the refusals counted so that
// they can be reported once a second instead of one by one: a caller past
// its rate must cost neither a log line nor an audit record per request.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// MaxKeys bounds the callers tracked at once; past it, callers whose
// bucket is full are forgotten (a sweep at most once a second), and until
// then new callers share one bucket (so many callers can neither grow the
// map nor escape the limit).
const MaxKeys = 4096

// Limiter is a token bucket per caller (a team, a remote address, a
// sandbox), rate tokens a second up to burst. Safe for concurrent use; a
// nil Limiter, or one of rate 0, admits everything.
type Limiter struct {
	rate, burst float64
	now         func() time.Time
	mu          sync.Mutex // guards m and swept
	m           map[string]*limitBucket
	swept       time.Time // last forgetFull, run at most once a second
}

// Bucket is one token bucket; the zero Bucket is empty. Its rate and burst
// are given at each Take, so a caller whose rate changes (a team's quota)
// keeps its bucket. Not safe for concurrent use: its owner's lock guards it.
type Bucket struct {
	tokens float64
	at     time.Time
}

// Full returns a Bucket holding burst tokens at now.
func Full(burst float64, now time.Time) Bucket { return Bucket{tokens: burst, at: now} }

// Take refills b at rate tokens a second up to burst, then spends n tokens
// if it holds them; a refusal spends nothing.
func (b *Bucket) Take(now time.Time, rate, burst, n float64) bool {
	b.tokens = math.Min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens < n {
		return false
	}
	b.tokens -= n
	return true
}

// fullAt reports whether b has refilled to burst by now.
func (b *Bucket) fullAt(now time.Time, rate, burst float64) bool {
	return b.tokens+now.Sub(b.at).Seconds()*rate >= burst
}

// limitBucket is one caller's bucket and its refusals not yet reported.
type limitBucket struct {
	Bucket
	refused  int
	reported time.Time
}

// New returns a Limiter of rate tokens a second and burst (at least 1).
func New(rate, burst float64) *Limiter {
	return &Limiter{rate: rate, burst: math.Max(1, burst), now: time.Now, m: map[string]*limitBucket{}}
}

// SetClock makes l read the time from now instead of time.Now. Call it
// before l is used (tests: a clock that moves only when told).
func (l *Limiter) SetClock(now func() time.Time) { l.now = now }

// Allow spends a token of key's bucket. When it refuses, report is the
// number of refusals to report now (at most once a second per key, then
// counting every refusal since the last report), else 0.
func (l *Limiter) Allow(key string) (ok bool, report int) {
	if l == nil || l.rate <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(key, now)
	if b.Take(now, l.rate, l.burst, 1) {
		return true, 0
	}
	b.refused++
	if now.Sub(b.reported) < time.Second {
		return false, 0
	}
	report, b.refused, b.reported = b.refused, 0, now
	return false, report
}

// Spent reports whether key's bucket holds less than a token now, so
// that its next Allow refuses: a caller checks it before work it spends a
// token on only when the work fails (a search). It makes no bucket.
func (l *Limiter) Spent(key string) bool {
	if l == nil || l.rate <= 0 {
		return false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[key]
	if !ok && len(l.m) >= MaxKeys {
		b, ok = l.m[overflowKey]
	}
	return ok && !b.fullAt(now, l.rate, 1)
}

// overflowKey is the bucket every key shares once the Limiter holds MaxKeys
// (no key the callers make starts with a NUL).
const overflowKey = "\x00overflow"

// bucket returns key's bucket, making it (full) if new. l.mu is held.
func (l *Limiter) bucket(key string, now time.Time) *limitBucket {
	if b, ok := l.m[key]; ok {
		return b
	}
	if len(l.m) >= MaxKeys && now.Sub(l.swept) >= time.Second {
		l.swept = now
		l.forgetFull(now)
	}
	if len(l.m) >= MaxKeys {
		key = overflowKey
		if b, ok := l.m[key]; ok {
			return b
		}
	}
	b := &limitBucket{Bucket: Full(l.burst, now)}
	l.m[key] = b
	return b
}

// forgetFull drops the buckets that have refilled and have no refusal left
// to report: forgetting them changes nothing. l.mu is held.
func (l *Limiter) forgetFull(now time.Time) {
	for k, b := range l.m {
		if b.refused == 0 && b.fullAt(now, l.rate, l.burst) {
			delete(l.m, k)
		}
	}
}
