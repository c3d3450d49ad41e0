package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// testSharedStorage: a paused record on shared storage outlives its node
// (not marked lost) and is taken over by one node with that storage and
// the sandbox's team, only once its node's lease is gone; resuming moves
// it to resuming first, which a node's loss turns into lost. Snapshots on
// the storage are seen by every node with it.
func testSharedStorage(t *testing.T, b backend) {
	ctx := context.Background()
	target := b.target(t)
	admin := b.mustOpen(t, target)
	node := func(id, storage string, ttl time.Duration) (*Store, Lease) {
		l, err := admin.Register(ctx, &Node{ID: id, Storage: storage}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		s := b.mustOpen(t, target)
		s.Fence(l)
		s.SetStorage(storage)
		return s, l
	}
	sa, la := node("a", "st1", time.Minute)
	sb, _ := node("b", "st1", time.Minute)
	sc, _ := node("c", "st2", time.Minute)
	put := func(s *Store, id string, st State, storage string) {
		if err := s.Put(ctx, &Sandbox{ID: id, Team: "t1", State: st, Persist: Persistence{Storage: storage}}); err != nil {
			t.Fatal(err)
		}
	}
	put(sa, "p", StatePaused, "st1")
	put(sa, "q", StatePaused, "")
	put(sa, "r", StateRunning, "")
	sharedSnapshots(t, sa, sb, sc)
	if _, err := sb.ClaimPaused(ctx, "p", team("t1")); !errors.Is(err, ErrOwnerLive) {
		t.Fatalf("claim while its node is live = %v, want ErrOwnerLive", err)
	}
	if _, err := admin.Movable(ctx, "p"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Movable while its node is live = %v", err)
	}
	// Node a's lease ends now (before: a 500 ms lease, which a loaded
	// machine let run out before the checks above that need it live).
	runOut(t, admin, la, &Node{ID: "a", Storage: "st1"})
	if _, err := admin.ExpireNodes(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]State{"p": StatePaused, "q": StateLost, "r": StateLost} {
		if r, err := sa.Get(ctx, id); err != nil || r.State != want {
			t.Fatalf("%s after its node expired: %+v %v, want %s", id, r, err, want)
		}
	}
	if r, err := admin.Movable(ctx, "p"); err != nil || r.ID != "p" || r.Persist.Storage != "st1" {
		t.Fatalf("Movable(p) = %+v, %v", r, err)
	}
	if ids, err := sb.MovableIDs(ctx, 10); err != nil || len(ids) != 1 || ids[0] != "p" {
		t.Fatalf("MovableIDs = %v %v, want [p]", ids, err)
	}
	if ids, err := sc.MovableIDs(ctx, 10); err != nil || len(ids) != 0 {
		t.Fatalf("MovableIDs on another storage = %v %v", ids, err)
	}
	if _, err := admin.Movable(ctx, "q"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Movable of a lost node-local record = %v", err)
	}
	if _, err := sc.ClaimPaused(ctx, "p", team("t1")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("claim from another storage = %v, want ErrNotFound", err)
	}
	if _, err := sb.ClaimPaused(ctx, "p", team("t2")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("claim for another team = %v, want ErrNotFound", err)
	}
	if r, err := sb.ClaimPaused(ctx, "p", team("t1")); err != nil || r.ID != "p" || r.State != StatePaused {
		t.Fatalf("claim = %+v, %v", r, err)
	}
	if n, st, _ := admin.SandboxOwner(ctx, "p"); n != "b" || st != string(StatePaused) {
		t.Fatalf("owner after the claim: %s %s", n, st)
	}
	if _, err := sc.ClaimPaused(ctx, "p", team("t1")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second claim = %v", err)
	}
	sa2, _ := node("a", "st1", time.Minute) // a comes back: p is not its own any more
	if r, err := sa2.Get(ctx, "p"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the old node still reads the claimed record: %+v %v", r, err)
	}
	if err := sa2.Transition(ctx, &Sandbox{ID: "p", State: StateResuming}, StatePaused); !errors.Is(err, ErrChanged) {
		t.Fatalf("the old node's resume = %v, want ErrChanged", err)
	}
	if ok, err := sa2.Remove(ctx, "p"); ok || err != nil {
		t.Fatalf("the old node's Remove = %v %v, want nothing removed", ok, err)
	}
	resuming := &Sandbox{ID: "p", Team: "t1", State: StateResuming, Persist: Persistence{Storage: "st1"}}
	if err := sb.Transition(ctx, resuming, StatePaused); err != nil {
		t.Fatal(err)
	}
	if err := sb.Transition(ctx, resuming, StatePaused); !errors.Is(err, ErrChanged) {
		t.Fatalf("a second resume = %v, want ErrChanged", err)
	}
	if _, err := admin.Movable(ctx, "p"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a resuming record is movable: %v", err)
	}
	if ok, err := sb.Remove(ctx, "p"); !ok || err != nil {
		t.Fatalf("Remove = %v %v", ok, err)
	}
	resumingLost(t, node)
}

// team allows a claim of team t's sandboxes.
func team(t string) func(*Sandbox) bool { return func(r *Sandbox) bool { return r.Team == t } }

// resumingLost: a node lost while resuming a sandbox loses it (it may be
// running it).
func resumingLost(t *testing.T, node func(id, storage string, ttl time.Duration) (*Store, Lease)) {
	ctx := context.Background()
	sd, ld := node("d", "st1", time.Minute)
	if err := sd.Put(ctx, &Sandbox{ID: "u", State: StateResuming, Persist: Persistence{Storage: "st1"}}); err != nil {
		t.Fatal(err)
	}
	runOut(t, sd, ld, &Node{ID: "d", Storage: "st1"})
	if _, err := sd.ExpireNodes(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := sd.Get(ctx, "u"); err != nil || r.State != StateLost {
		t.Fatalf("resuming record of a lost node: %+v %v, want lost", r, err)
	}
}

// sharedSnapshots: a snapshot on shared storage is seen (got, listed,
// deleted) by every node with that storage; a node-local one only by its
// node; SharedImages lists the shared one.
func sharedSnapshots(t *testing.T, sa, sb, sc *Store) {
	ctx := context.Background()
	for _, s := range []*Snapshot{{ID: "s1", Name: "shared", Storage: "st1"}, {ID: "s2", Name: "local"}} {
		if err := sa.PutSnapshot(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := sb.TeamSnapshot(ctx, "", "shared"); err != nil || s.ID != "s1" {
		t.Fatalf("b gets the shared snapshot: %+v %v", s, err)
	}
	for _, s := range []*Store{sb, sc} {
		if _, err := s.GetSnapshot(ctx, "s2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("another node sees a node-local snapshot: %v", err)
		}
	}
	if _, err := sc.GetSnapshot(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a node on another storage sees the shared snapshot: %v", err)
	}
	// Another team's newer snapshot of the same name, on another node:
	// never the default team's home, always its own team's.
	other := &Snapshot{ID: "s3", Team: "t2", Name: "local", CreatedAt: time.Now().Add(time.Hour)}
	if err := sb.PutSnapshot(ctx, other); err != nil {
		t.Fatal(err)
	}
	for key, id := range map[string]string{"local": "s2", "s1": "s1"} {
		if s, home, err := sc.SnapshotHome(ctx, "", key); err != nil || s.ID != id || home != "a" {
			t.Fatalf("SnapshotHome(%s) = %+v %q %v", key, s, home, err)
		}
	}
	if s, home, err := sc.SnapshotHome(ctx, "t2", "local"); err != nil || s.ID != "s3" || home != "b" {
		t.Fatalf("SnapshotHome(t2, local) = %+v %q %v", s, home, err)
	}
	if _, _, err := sc.SnapshotHome(ctx, "t2", "s1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SnapshotHome of another team's id: %v", err)
	}
	if err := sb.DeleteSnapshot(ctx, "s3"); err != nil {
		t.Fatal(err)
	}
	if l, _ := sb.ListSnapshots(ctx); len(l) != 1 || l[0].ID != "s1" {
		t.Fatalf("b lists %+v", l)
	}
	if sbx, snaps, err := sb.SharedImages(ctx); err != nil || !sbx["p"] || len(sbx) != 1 || !snaps["s1"] || len(snaps) != 1 {
		t.Fatalf("SharedImages = %v %v %v", sbx, snaps, err)
	}
	if err := sb.DeleteSnapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if l, _ := sa.ListSnapshots(ctx); len(l) != 1 || l[0].ID != "s2" {
		t.Fatalf("after b deleted the shared snapshot a lists %+v", l)
	}
}
