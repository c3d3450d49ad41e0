package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func testLeases(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.fresh(t)
	n := &Node{ID: "n1", Address: "http://10.0.0.1:3000", Runtimes: []string{"runsc"},
		Templates: []string{"base"}, Capacity: Capacity{CPU: 8, MemoryMB: 16384}}
	l1, err := s.Register(ctx, n, time.Minute)
	if err != nil || l1.Token <= 0 || time.Until(l1.Expires) < 50*time.Second {
		t.Fatalf("Register = %+v, %v", l1, err)
	}
	if _, err := s.Register(ctx, n, time.Minute); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("Register over a live lease = %v, want ErrLeaseHeld", err)
	}
	n.Used = Capacity{CPU: 2, MemoryMB: 1024, Sandboxes: 1}
	if l1, err = s.Renew(ctx, l1, n, time.Minute); err != nil {
		t.Fatal(err)
	}
	ns, err := s.Nodes(ctx)
	if err != nil || len(ns) != 1 || ns[0].State != "live" || ns[0].Token != l1.Token ||
		ns[0].Used.Sandboxes != 1 || !slices.Equal(ns[0].Runtimes, []string{"runsc"}) || !ns[0].ExpiresAt.Equal(l1.Expires) {
		t.Fatalf("Nodes = %+v, %v", ns, err)
	}
	if err := s.Release(ctx, l1); err != nil {
		t.Fatal(err)
	}
	l2, err := s.Register(ctx, n, time.Minute) // a released lease is taken over at once
	if err != nil || l2.Token <= l1.Token {
		t.Fatalf("Register after Release = %+v, %v (first token %d)", l2, err, l1.Token)
	}
	other, err := s.Register(ctx, &Node{ID: "n2"}, time.Minute)
	if err != nil || other.Token <= l2.Token {
		t.Fatalf("tokens must increase across nodes: %+v after %d, %v", other, l2.Token, err)
	}
	if _, err := s.Renew(ctx, l1, n, time.Minute); !errors.Is(err, ErrFenced) {
		t.Fatalf("Renew of a replaced lease = %v, want ErrFenced", err)
	}
	if err := s.Release(ctx, l1); !errors.Is(err, ErrFenced) {
		t.Fatalf("Release of a replaced lease = %v, want ErrFenced", err)
	}
}

// runOut ends lease l now (a Renew to 1 ms, recording n) and waits until
// it has run out. A test gives its lease a long ttl and ends it here, after
// the steps that need it live: a short ttl from Register (200-500 ms) ran
// out on a loaded machine before those steps were done.
func runOut(t *testing.T, s *Store, l Lease, n *Node) {
	t.Helper()
	l, err := s.Renew(context.Background(), l, n, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// the database's clock is this host's: past l.Expires here is past it there
	time.Sleep(time.Until(l.Expires) + 10*time.Millisecond)
}

// testFencing: a node's records are its own; when its lease runs out its
// writes are refused, ExpireNodes marks its sandboxes lost, and after it
// registers again only the new lease may act on them.
func testFencing(t *testing.T, b backend) {
	ctx := context.Background()
	target := b.target(t)
	admin := b.mustOpen(t, target)
	la, err := admin.Register(ctx, &Node{ID: "a"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := admin.Register(ctx, &Node{ID: "b"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := b.mustOpen(t, target), b.mustOpen(t, target)
	sa.Fence(la)
	sb.Fence(lb)
	for _, id := range []string{"x", "y"} {
		if err := sa.Put(ctx, &Sandbox{ID: id, State: "running"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sb.Put(ctx, &Sandbox{ID: "z", State: "running"}); err != nil {
		t.Fatal(err)
	}
	if err := sb.Put(ctx, &Sandbox{ID: "x", State: "running"}); !errors.Is(err, ErrExists) {
		t.Fatalf("b overwriting a's record = %v, want ErrExists", err)
	}
	if l, _ := sb.List(ctx); len(l) != 1 || l[0].ID != "z" {
		t.Fatalf("b lists %v, want only its own z", l)
	}
	if _, err := sb.Get(ctx, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("b reads a's record: %v", err)
	}
	if l, _ := admin.List(ctx); len(l) != 0 {
		t.Fatalf("the unfenced (single-node) store lists cluster records: %v", l)
	}
	runOut(t, admin, la, &Node{ID: "a"})
	if err := sa.Put(ctx, &Sandbox{ID: "x", State: "paused"}); !errors.Is(err, ErrFenced) {
		t.Fatalf("Put after the lease ran out = %v, want ErrFenced", err)
	}
	if err := sa.Delete(ctx, "y"); !errors.Is(err, ErrFenced) {
		t.Fatalf("Delete after the lease ran out = %v, want ErrFenced", err)
	}
	if _, err := sa.Renew(ctx, la, &Node{ID: "a"}, time.Minute); !errors.Is(err, ErrFenced) {
		t.Fatalf("Renew after the lease ran out = %v, want ErrFenced", err)
	}
	if ids, err := admin.ExpireNodes(ctx); err != nil || !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("ExpireNodes = %v, %v; want [a]", ids, err)
	}
	if ids, err := admin.ExpireNodes(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("second ExpireNodes = %v, %v; want none", ids, err)
	}
	if r, err := sa.Get(ctx, "x"); err != nil || r.State != StateLost {
		t.Fatalf("a's sandbox after expiry: %+v, %v; want lost", r, err)
	}
	if r, err := sb.Get(ctx, "z"); err != nil || r.State != "running" {
		t.Fatalf("b's sandbox after a's expiry: %+v, %v", r, err)
	}
	la2, err := admin.Register(ctx, &Node{ID: "a"}, time.Minute)
	if err != nil || la2.Token <= lb.Token {
		t.Fatalf("re-Register = %+v, %v", la2, err)
	}
	sa2 := b.mustOpen(t, target)
	sa2.Fence(la2)
	if l, _ := sa2.List(ctx); len(l) != 2 || l[0].State != StateLost {
		t.Fatalf("rejoined node lists %+v, want its two lost records", l)
	}
	if err := sa.Delete(ctx, "x"); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale lease Delete after rejoin = %v, want ErrFenced", err)
	}
	if node, st, err := admin.SandboxOwner(ctx, "y"); err != nil || node != "a" || st != string(StateLost) {
		t.Fatalf("SandboxOwner(y) = %q %q %v", node, st, err)
	}
	if node, st, err := admin.SandboxOwner(ctx, "z"); err != nil || node != "b" || st != "running" {
		t.Fatalf("SandboxOwner(z) = %q %q %v", node, st, err)
	}
	if err := sa2.Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if node, st, err := admin.SandboxOwner(ctx, "x"); err != nil || node != "a" || st != StateEnded {
		t.Fatalf("SandboxOwner of a deleted record = %q %q %v, want a's tombstone", node, st, err)
	}
	if _, _, err := admin.SandboxOwner(ctx, "never"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SandboxOwner of an unknown id: %v", err)
	}
	if err := admin.Put(ctx, &Sandbox{ID: "solo", State: StateRunning}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, "solo"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := admin.SandboxOwner(ctx, "solo"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the single-node store left a tombstone: %v", err)
	}
}

// testRegisterExpires: registering over a lease that ran out but was not
// collected marks the old incarnation's sandboxes lost first.
func testRegisterExpires(t *testing.T, b backend) {
	ctx := context.Background()
	target := b.target(t)
	admin := b.mustOpen(t, target)
	l, err := admin.Register(ctx, &Node{ID: "a"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sa := b.mustOpen(t, target)
	sa.Fence(l)
	if err := sa.Put(ctx, &Sandbox{ID: "x", State: "running"}); err != nil {
		t.Fatal(err)
	}
	runOut(t, admin, l, &Node{ID: "a"})
	l2, err := admin.Register(ctx, &Node{ID: "a"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sa.Fence(l2)
	if r, err := sa.Get(ctx, "x"); err != nil || r.State != StateLost {
		t.Fatalf("record after re-Register over an expired lease: %+v, %v", r, err)
	}
	if ns, _ := admin.Nodes(ctx); len(ns) != 1 || ns[0].State != "live" || ns[0].Token != l2.Token {
		t.Fatalf("Nodes = %+v", ns)
	}
}

// testBuildOwners: a build belongs to the node that first recorded it;
// every node lists all builds, each its own through OwnBuilds.
func testBuildOwners(t *testing.T, b backend) {
	ctx := context.Background()
	target := b.target(t)
	admin := b.mustOpen(t, target)
	sa, sb := b.mustOpen(t, target), b.mustOpen(t, target)
	for _, n := range []struct {
		s  *Store
		id string
	}{{sa, "a"}, {sb, "b"}} {
		l, err := admin.Register(ctx, &Node{ID: n.id}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		n.s.Fence(l)
	}
	now := time.Now().UTC()
	if err := sa.PutBuild(ctx, &BuildRec{ID: "b1", TemplateID: "t", Status: "building", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := sb.PutBuild(ctx, &BuildRec{ID: "b2", TemplateID: "t", Status: "building", CreatedAt: now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := sb.PutBuild(ctx, &BuildRec{ID: "b1", TemplateID: "t", Status: "ready", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	ids := func(bs []*BuildRec, err error) string {
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, b := range bs {
			out = append(out, b.ID+":"+b.Status)
		}
		return strings.Join(out, ",")
	}
	if got := ids(sa.OwnBuilds(ctx)); got != "b1:ready" {
		t.Errorf("a's own builds = %s, want b1 (updated by b, still a's)", got)
	}
	if got := ids(sb.OwnBuilds(ctx)); got != "b2:building" {
		t.Errorf("b's own builds = %s", got)
	}
	if got := ids(admin.Builds(ctx, "")); got != "b1:ready,b2:building" {
		t.Errorf("all builds = %s", got)
	}
	if got := ids(admin.OwnBuilds(ctx)); got != "" {
		t.Errorf("the unfenced store's own builds = %s, want none of the nodes'", got)
	}
}
