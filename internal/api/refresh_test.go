package api

import (
	"context"
	"log/slog"
	"testing"

	"github.com/sbx-dev/sbx/internal/store"
)

// TestRefreshSharedStore: two nodes' Tenants over one store, as a
// cluster's. A key revoked, a team created or its quota changed through
// one is seen by the other at its next Refresh (before, only at its
// restart: a revoked key went on working there), and the other's flush of
// the revoked key's last use does not bring the key back (before, its
// upsert stored it again, for good).
func TestRefreshSharedStore(t *testing.T) {
	ctx := context.Background()
	a, st, _ := newTenants(t)
	b, err := LoadTenants(ctx, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	key, tm := newTeamKey(t, a, "team_r")
	if _, ok := b.lookup(key); ok {
		t.Fatal("node b knew a key created through a before its refresh")
	}
	must(t, b.Refresh(ctx))
	if p, ok := b.lookup(key); !ok || p.Team != "team_r" {
		t.Fatalf("node b after refresh: %+v %v", p, ok)
	}
	tm.Quota.Sandboxes = 7
	must(t, a.PutTeam(ctx, tm))
	must(t, b.Refresh(ctx))
	if q := b.effective("team_r"); q.Sandboxes != 7 {
		t.Fatalf("node b's quota after a's change: %+v", q)
	}
	p, _ := a.lookup(key)
	must(t, a.RevokeKey(ctx, "team_r", p.KeyID))
	b.flush(ctx) // b used the key (lookup above): its last use is written
	must(t, b.Refresh(ctx))
	if _, ok := b.lookup(key); ok {
		t.Fatal("node b accepts a key revoked through a")
	}
	b.flush(ctx)
	if ks, _ := st.APIKeys(ctx); len(ks) != 0 {
		t.Fatalf("a revoked key is back in the store: %+v", ks)
	}
}

// TestRefreshKeepsRacedChange: a Refresh that read the store before a
// change made through its own node does not undo that change.
func TestRefreshKeepsRacedChange(t *testing.T) {
	ctx := context.Background()
	a, st, _ := newTenants(t)
	key, _ := newTeamKey(t, a, "team_s")
	p, _ := a.lookup(key)
	a.mu.RLock()
	gen := a.gen
	a.mu.RUnlock()
	teams, _ := st.Teams(ctx) // read while the key lives
	keys, _ := st.APIKeys(ctx)
	must(t, a.RevokeKey(ctx, "team_s", p.KeyID))
	a.install(gen, teams, keys)
	if _, ok := a.lookup(key); ok {
		t.Fatal("a refresh that read the store before the revoke brought the key back")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newTeamKey(t *testing.T, tn *Tenants, id string) (string, *store.Team) {
	t.Helper()
	tm := &store.Team{ID: id, Name: id}
	must(t, tn.PutTeam(context.Background(), tm))
	key, _, err := tn.CreateKey(context.Background(), id, "k", "")
	must(t, err)
	return key, tm
}
