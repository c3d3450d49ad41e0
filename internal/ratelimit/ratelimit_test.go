package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

// TestLimiter: a bucket admits its burst, then rate a second; refusals are
// reported at most once a second, each report counting all since the last;
// a rate of 0 admits everything.
func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(2, 4)
	l.now = func() time.Time { return now }
	admitted, reported, refused := 0, 0, 0
	for range 10 {
		ok, n := l.Allow("a")
		if ok {
			admitted++
		} else {
			refused++
			reported += n
		}
	}
	if admitted != 4 || refused != 6 {
		t.Fatalf("admitted %d refused %d, want 4 and 6", admitted, refused)
	}
	if reported != 1 {
		t.Fatalf("reported %d refusals in the first second, want the first one alone", reported)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another caller was refused")
	}
	now = now.Add(1500 * time.Millisecond) // 3 tokens back
	for range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatal("refilled token refused")
		}
	}
	if ok, n := l.Allow("a"); ok || n != 6 {
		t.Fatalf("allow = %v, report %d; want refused, reporting the 5 before and this one", ok, n)
	}
	if ok, _ := New(0, 0).Allow("a"); !ok {
		t.Fatal("rate 0 refused")
	}
	var nilLim *Limiter
	if ok, _ := nilLim.Allow("a"); !ok {
		t.Fatal("nil limiter refused")
	}
}

// TestLimiterBounded: however many callers, the limiter tracks at most
// MaxKeys; full buckets are forgotten first, and past that new callers
// share one bucket (a flood from many addresses still ends in 429s).
func TestLimiterBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(1, 2)
	l.now = func() time.Time { return now }
	for i := range 3 * MaxKeys {
		l.Allow(fmt.Sprint("idle", i))
	}
	if len(l.m) > MaxKeys+1 {
		t.Fatalf("%d callers tracked", len(l.m))
	}
	now = now.Add(time.Hour) // all refilled: forgettable
	for i := range MaxKeys {
		l.Allow(fmt.Sprint("busy", i))
		l.Allow(fmt.Sprint("busy", i))
	}
	refused := 0
	for i := range 100 {
		if ok, _ := l.Allow(fmt.Sprint("new", i)); !ok {
			refused++
		}
	}
	if len(l.m) > MaxKeys+1 {
		t.Fatalf("%d callers tracked", len(l.m))
	}
	if refused < 90 {
		t.Fatalf("new callers past the bound shared no bucket: %d of 100 refused", refused)
	}
}

// TestBucketTake: n tokens at once, a refusal spends nothing, the refill is
// capped at the burst given at each Take (a caller's rate may change).
func TestBucketTake(t *testing.T) {
	now := time.Unix(1000, 0)
	b := Full(3, now)
	steps := []struct {
		after       time.Duration
		rate, burst float64
		n           float64
		ok          bool
	}{
		{0, 1, 3, 2, true},                      // 3 → 1
		{0, 1, 3, 2, false},                     // 1 left: refused, nothing spent
		{0, 1, 3, 1, true},                      // 1 → 0
		{time.Hour, 1, 3, 4, false},             // refilled to the burst only
		{0, 1, 3, 3, true},                      // 3 → 0
		{500 * time.Millisecond, 4, 8, 2, true}, // a new rate: 2 tokens back
		{0, 4, 8, 1, false},
	}
	for i, s := range steps {
		now = now.Add(s.after)
		if got := b.Take(now, s.rate, s.burst, s.n); got != s.ok {
			t.Fatalf("step %d: Take(%g) = %v, want %v", i, s.n, got, s.ok)
		}
	}
}

// TestSpent: Spent tells whether the next Allow of a key refuses, without
// spending or making a bucket.
func TestSpent(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(1, 2)
	l.now = func() time.Time { return now }
	if l.Spent("a") {
		t.Fatal("an unknown key is spent")
	}
	l.Allow("a")
	if l.Spent("a") {
		t.Fatal("spent with a token left")
	}
	l.Allow("a")
	for range 2 { // the second: Spent spent nothing
		if !l.Spent("a") {
			t.Fatal("not spent after its burst")
		}
	}
	now = now.Add(time.Second)
	if l.Spent("a") {
		t.Fatal("spent after a token came back")
	}
	if New(0, 1).Spent("a") || (*Limiter)(nil).Spent("a") {
		t.Fatal("an unlimited Limiter is spent")
	}
}
