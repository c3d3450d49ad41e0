package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/sandbox/sandboxtest"
	"github.com/sbx-dev/sbx/internal/store"
)

// TestMovedPause (fake runtime, files-only pause, two nodes on one store
// and one shared dir): a pause goes to the shared dir; the other node
// cannot take it while its node is live, nor for another team; once the
// node's lease is gone it takes it over and resumes it; the old node,
// back with a new lease, neither resumes it (and forgets it) nor deletes
// its image by a kill.
func TestMovedPause(t *testing.T) {
	ctx := context.Background()
	db, shared := t.TempDir(), t.TempDir()
	admin := openStore(t, db)
	node := func(id string) (*Manager, *store.Store, store.Lease) {
		l, err := admin.Register(ctx, &store.Node{ID: id, Storage: "st"}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		st := openStore(t, db)
		st.Fence(l)
		st.SetStorage("st")
		images := t.TempDir()
		return newTestManager(t, sandboxtest.NewHost(), st, func(c *Config) {
			c.ImagesDir, c.SharedDir, c.StorageID = images, shared, "st"
		}), st, l
	}
	// a's lease is long enough for its creates and pauses on a loaded
	// machine; it is made to lapse (as a node that stopped renewing) below.
	m1, st1, la := node("a")
	m2, _, _ := node("b")
	in, err := m1.Create(ctx, CreateOpts{Team: "t1", Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	k, err := m1.Create(ctx, CreateOpts{Team: "t1", Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{in.ID, k.ID} {
		if err := m1.Pause(ctx, id, false); err != nil {
			t.Fatal(err)
		}
	}
	image := filepath.Join(shared, "paused", in.ID, "complete")
	if _, err := os.Stat(image); err != nil {
		t.Fatalf("paused image not in the shared dir: %v", err)
	}
	if err := m2.AdoptMoved(ctx, "t1", in.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("take-over while its node is live: %v", err)
	}
	if _, err := st1.Renew(ctx, la, &store.Node{ID: "a", Storage: "st"}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { // a's lease runs out
		ids, err := admin.ExpireNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ids, "a")
	})
	if err := m2.AdoptMoved(ctx, "t2", in.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("take-over for another team: %v", err)
	}
	for _, id := range []string{in.ID, k.ID} {
		if err := m2.AdoptMoved(ctx, "t1", id); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := m2.Owned("t1", in.ID); err != nil || got.State != store.StatePaused || got.EnvdToken != in.EnvdToken {
		t.Fatalf("taken over: %+v %v", got, err)
	}
	l, err := admin.Register(ctx, &store.Node{ID: "a"}, time.Minute) // a is back
	if err != nil {
		t.Fatal(err)
	}
	st1.Fence(l)
	if _, _, err := m1.Connect(ctx, in.ID, time.Minute, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the old node resumes the moved sandbox: %v", err)
	}
	if _, err := m1.Get(in.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the old node still holds the moved sandbox: %v", err)
	}
	_ = m1.Kill(ctx, k.ID) // the old node's copy only: the record is b's
	for _, id := range []string{in.ID, k.ID} {
		if _, err := os.Stat(filepath.Join(shared, "paused", id, "complete")); err != nil {
			t.Fatalf("the old node's resume or kill touched the image: %v", err)
		}
	}
	if _, resumed, err := m2.Connect(ctx, k.ID, time.Minute, false); err != nil || !resumed {
		t.Fatalf("resume after the old node's kill: %v %v", resumed, err)
	}
	back, resumed, err := m2.Connect(ctx, in.ID, time.Minute, false)
	if err != nil || !resumed || back.State != store.StateRunning || back.AgentAddr == "" {
		t.Fatalf("resume on the new node: %+v %v %v", back, resumed, err)
	}
	if _, err := os.Stat(filepath.Dir(image)); !os.IsNotExist(err) {
		t.Fatalf("image left after the resume: %v", err)
	}
	if err := m2.Kill(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
}
