package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// testPausedBytes: PausedBytes sums the images of a team's paused
// sandboxes on every node of the store, and nothing else: not another
// team's, not a running sandbox's.
func testPausedBytes(t *testing.T, b backend) {
	ctx := context.Background()
	target := b.target(t)
	admin := b.mustOpen(t, target)
	node := func(id string) *Store {
		l, err := admin.Register(ctx, &Node{ID: id}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		s := b.mustOpen(t, target)
		s.Fence(l)
		return s
	}
	na, nb := node("a"), node("b")
	put := func(s *Store, id, team string, st State, bytes int64) {
		if err := s.Put(ctx, &Sandbox{ID: id, Team: team, State: st, Persist: Persistence{ImageBytes: bytes}}); err != nil {
			t.Fatal(err)
		}
	}
	put(na, "p1", "t1", StatePaused, 1<<20)
	put(nb, "p2", "t1", StatePaused, 2<<20)
	put(nb, "p3", "t2", StatePaused, 4<<20)
	put(na, "r1", "t1", StateRunning, 8<<20)
	for _, s := range []*Store{na, nb, admin} {
		if n, err := s.PausedBytes(ctx, "t1"); err != nil || n != 3<<20 {
			t.Fatalf("PausedBytes(t1) = %d, %v; want %d (both nodes' paused sandboxes)", n, err, 3<<20)
		}
	}
	if n, err := na.PausedBytes(ctx, "none"); err != nil || n != 0 {
		t.Fatalf("PausedBytes(none) = %d, %v", n, err)
	}
}

// testAllSnapshots: AllSnapshots returns every node's snapshot records,
// those on its own disk that another node does not see (ListSnapshots)
// too: a team's disk quota counts them on every node.
func testAllSnapshots(t *testing.T, b backend) {
	ctx := context.Background()
	target := b.target(t)
	admin := b.mustOpen(t, target)
	node := func(id string) *Store {
		l, err := admin.Register(ctx, &Node{ID: id}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		s := b.mustOpen(t, target)
		s.Fence(l)
		return s
	}
	na, nb := node("a"), node("b")
	for i, s := range []*Store{na, nb} {
		if err := s.PutSnapshot(ctx, &Snapshot{ID: string(rune('x' + i)), Team: "t1", Bytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	if l, _ := nb.ListSnapshots(ctx); len(l) != 1 {
		t.Fatalf("b sees %d snapshots, want its own", len(l))
	}
	for _, s := range []*Store{na, nb} {
		if l, err := s.AllSnapshots(ctx); err != nil || len(l) != 2 {
			t.Fatalf("AllSnapshots: %d, %v; want both nodes'", len(l), err)
		}
	}
}

// BenchmarkPausedBytes: one disk-quota check's read of 1,000 paused
// records (SQLite).
func BenchmarkPausedBytes(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	env := map[string]string{"A": "1", "B": "2", "PATH": "/usr/bin"}
	for i := range 1000 {
		r := &Sandbox{ID: fmt.Sprintf("sb%04d", i), Team: fmt.Sprintf("t%d", i%10), State: StatePaused,
			EnvVars: env, Metadata: env, Persist: Persistence{ImageBytes: 1 << 20}}
		if err := s.Put(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if n, err := s.PausedBytes(ctx, "t1"); err != nil || n != 100<<20 {
			b.Fatal(n, err)
		}
	}
}
