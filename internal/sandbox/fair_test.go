package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
)

// TestAdmissionFair: with one slot, a noisy team that queued 5 creates
// first does not make a quiet team wait behind all of them: slots go round
// robin across teams, first come first served within a team.
func TestAdmissionFair(t *testing.T) {
	m := &Manager{cfg: Config{MaxCreating: 1, MaxQueued: 100, AdmitWait: time.Minute}, sandboxes: map[string]*Sandbox{}}
	m.slots = semaphore.NewWeighted(1)
	bg := context.Background()
	if err := m.admit(bg, "crun", "noisy"); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 10)
	waiting := 0
	queue := func(team string, n int) {
		for range n {
			go func() {
				if err := m.admit(bg, "crun", team); err != nil {
					t.Error(err)
				}
				order <- team
			}()
			waiting++
			for m.count()[1] != waiting { // queued in this order
				time.Sleep(time.Millisecond)
			}
		}
	}
	queue("noisy", 5)
	queue("quiet", 2)
	var got []string
	for range 7 {
		m.release("crun")
		got = append(got, <-order)
	}
	want := []string{"noisy", "quiet", "noisy", "quiet", "noisy", "noisy", "noisy"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("grant order %v, want %v", got, want)
		}
	}
	m.release("crun")
	if c := m.count(); c != [2]int{0, 0} {
		t.Fatalf("creating, waiting = %v", c)
	}
}

// TestFairQueueRemove: a waiter that gives up leaves no trace in the ring.
func TestFairQueueRemove(t *testing.T) {
	var q fairQueue
	a, b := &waiter{team: "a"}, &waiter{team: "b"}
	q.push(a)
	q.push(b)
	q.remove(a)
	if w := q.pop(); w != b || !q.empty() {
		t.Fatalf("pop = %v, empty = %v", w, q.empty())
	}
}

// TestAdmissionQueueShare: alone, a team may fill the whole queue; when it
// is full, another team's create takes the place of the flooding team's
// newest waiter (refused with ErrBusy), never the reverse.
func TestAdmissionQueueShare(t *testing.T) {
	m := &Manager{cfg: Config{MaxCreating: 1, MaxQueued: 3, AdmitWait: time.Minute}, sandboxes: map[string]*Sandbox{}}
	m.slots = semaphore.NewWeighted(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.admit(ctx, "crun", "noisy"); err != nil {
		t.Fatal(err)
	}
	results := make(chan [2]any, 8)
	start := func(team string, i int) {
		go func() { results <- [2]any{team, m.admit(ctx, "crun", team)} }()
		for m.count()[1] != i {
			time.Sleep(time.Millisecond)
		}
	}
	for i := 1; i <= 3; i++ {
		start("noisy", i) // the whole queue
	}
	if err := m.admit(ctx, "crun", "noisy"); !errors.Is(err, ErrBusy) {
		t.Fatalf("a 4th create of the same team: %v, want ErrBusy", err)
	}
	go func() { results <- [2]any{"quiet", m.admit(ctx, "crun", "quiet")} }()
	r := <-results // the noisy team's newest waiter makes room
	if r[0] != "noisy" || !errors.Is(r[1].(error), ErrBusy) {
		t.Fatalf("evicted: %v", r)
	}
	for m.count()[1] != 3 {
		time.Sleep(time.Millisecond)
	}
	var order []string
	for range 3 {
		m.release("crun")
		r := <-results
		if r[1] != nil {
			t.Fatalf("%v", r)
		}
		order = append(order, r[0].(string))
	}
	if order[0] != "noisy" || order[1] != "quiet" || order[2] != "noisy" {
		t.Fatalf("grant order %v, want noisy quiet noisy", order)
	}
	m.release("crun")
	if c := m.count(); c != [2]int{0, 0} || !m.fair.empty() {
		t.Fatalf("creating, waiting = %v, queue empty %v", c, m.fair.empty())
	}
}
