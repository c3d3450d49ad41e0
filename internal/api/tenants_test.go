package api

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

func newTenants(t *testing.T) (*Tenants, *store.Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tn, err := LoadTenants(context.Background(), st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return tn, st, dir
}

// TestTenantKeys: a key is stored as its SHA-256 only (the key never
// reaches the database), looks up to its team, survives a reload, records
// its last use only on flush, and is refused once revoked; another team
// can neither rename nor revoke it.
func TestTenantKeys(t *testing.T) {
	ctx := context.Background()
	tn, st, dir := newTenants(t)
	if err := tn.PutTeam(ctx, &store.Team{ID: "team_a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	key, rec, err := tn.CreateKey(ctx, "team_a", "k", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "e2b_") || len(key) != 44 {
		t.Fatalf("key %q", key)
	}
	db, _ := os.ReadFile(dir + "/sbx.db")
	wal, _ := os.ReadFile(dir + "/sbx.db-wal")
	if strings.Contains(string(db)+string(wal), key) || strings.Contains(string(db)+string(wal), key[4:]) {
		t.Fatal("the key itself is in the database")
	}
	if p, ok := tn.lookup(key); !ok || p.Team != "team_a" || p.Admin {
		t.Fatalf("lookup = %+v %v", p, ok)
	}
	for _, bad := range []string{"", "e2b_", key + "0", key[:43], strings.ToUpper(key)} {
		if _, ok := tn.lookup(bad); ok {
			t.Errorf("lookup(%q) accepted", bad)
		}
	}
	if k, _ := st.APIKeys(ctx); len(k) != 1 || !k[0].LastUsed.IsZero() {
		t.Fatalf("last use written per request: %+v", k)
	}
	tn.flush(ctx)
	reloaded, err := LoadTenants(ctx, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if ks := reloaded.Keys("team_a"); len(ks) != 1 || ks[0].LastUsed.IsZero() {
		t.Fatalf("after flush and reload: %+v", ks)
	}
	if _, ok := reloaded.lookup(key); !ok {
		t.Fatal("key lost on reload")
	}
	if err := tn.RenameKey(ctx, "team_b", rec.ID, "x"); err == nil {
		t.Fatal("another team renamed the key")
	}
	if err := tn.RevokeKey(ctx, "team_b", rec.ID); err == nil {
		t.Fatal("another team revoked the key")
	}
	if err := tn.RevokeKey(ctx, "team_a", rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := tn.lookup(key); ok {
		t.Fatal("revoked key accepted")
	}
}

// TestQuotaReserve: many reservations at once never pass a limit together;
// releasing makes room again; the default team has no quota.
func TestQuotaReserve(t *testing.T) {
	tn, _, _ := newTenants(t)
	tn.Defaults = store.Quota{Sandboxes: 3, VCPU: 100}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var releases []func()
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rel, err := tn.reserve("team_a", usage{}, usage{1, 1, 0}); err == nil {
				mu.Lock()
				releases = append(releases, rel)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(releases) != 3 {
		t.Fatalf("%d of 20 admitted under a quota of 3", len(releases))
	}
	if _, err := tn.reserve("team_a", usage{}, usage{1, 1, 0}); err == nil {
		t.Fatal("admitted past the quota")
	}
	releases[0]()
	if _, err := tn.reserve("team_a", usage{}, usage{1, 1, 0}); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := tn.reserve("team_b", usage{sandboxes: 3}, usage{1, 1, 0}); err == nil {
		t.Fatal("live sandboxes not counted")
	}
	if _, err := tn.reserve("", usage{sandboxes: 1000}, usage{1, 1, 0}); err != nil {
		t.Fatalf("default team limited: %v", err)
	}
	if err := tn.PutTeam(context.Background(), &store.Team{ID: "team_c", Quota: store.Quota{Sandboxes: -1, CreatesPerSec: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.reserve("team_c", usage{sandboxes: 50}, usage{1, 1, 0}); err != nil {
		t.Fatalf("own unlimited quota: %v", err)
	}
	if _, err := tn.reserve("team_c", usage{}, usage{1, 1, 0}); err == nil {
		t.Fatal("create rate not bounded")
	}
}

// TestQuotaBoundsLive: a create counts the team's live sandboxes (a walk
// over every sandbox) only when the team's quota bounds them, their vCPUs
// or their memory; never for the default team or one bounded only in rate.
func TestQuotaBoundsLive(t *testing.T) {
	tn, _, _ := newTenants(t)
	if tn.boundsLive("") || tn.boundsLive("team_a") {
		t.Fatal("live usage needed without any quota")
	}
	var none *Tenants
	if none.boundsLive("team_a") {
		t.Fatal("live usage needed without tenants")
	}
	for _, q := range []store.Quota{{Sandboxes: 2}, {VCPU: 4}, {MemoryMB: 1024}} {
		tn.Defaults = q
		if !tn.boundsLive("team_a") || tn.boundsLive("") {
			t.Fatalf("quota %+v: team_a %v, default team %v", q, tn.boundsLive("team_a"), tn.boundsLive(""))
		}
	}
	tn.Defaults = store.Quota{Sandboxes: 2}
	if err := tn.PutTeam(context.Background(), &store.Team{ID: "team_r", Quota: store.Quota{Sandboxes: -1, CreatesPerSec: 5}}); err != nil {
		t.Fatal(err)
	}
	if tn.boundsLive("team_r") {
		t.Fatal("a team with its own unlimited quota (rate only) needs live usage")
	}
}

// TestTenantsConcurrent: lookups while keys are renamed, flushed, created
// and revoked (run with -race).
func TestTenantsConcurrent(t *testing.T) {
	ctx := context.Background()
	tn, _, _ := newTenants(t)
	key, rec, err := tn.CreateKey(ctx, "team_a", "k", "")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if p, ok := tn.lookup(key); !ok || p.Team != "team_a" {
					t.Error("lookup failed while others changed keys")
					return
				}
				_ = tn.Keys("team_a")
			}
		}()
	}
	for i := range 20 {
		if err := tn.RenameKey(ctx, "team_a", rec.ID, "k"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
		tn.flush(ctx)
		_, r2, err := tn.CreateKey(ctx, "team_a", "tmp", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := tn.RevokeKey(ctx, "team_a", r2.ID); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestKeysPerTeamBounded: a team holding maxKeysPerTeam keys is refused
// the next with a quota error (429), keys created at once never pass the
// bound together, another team is unaffected, and a revoked key makes
// room again.
func TestKeysPerTeamBounded(t *testing.T) {
	defer func(n int) { maxKeysPerTeam = n }(maxKeysPerTeam)
	maxKeysPerTeam = 5
	ctx := context.Background()
	tn, _, _ := newTenants(t)
	for _, id := range []string{"team_a", "team_b"} {
		if err := tn.PutTeam(ctx, &store.Team{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	recs := make([]store.APIKey, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); _, recs[i], errs[i] = tn.CreateKey(ctx, "team_a", "k", "") }()
	}
	wg.Wait()
	made, refused := 0, 0
	var one store.APIKey
	for i, err := range errs {
		switch {
		case err == nil:
			made, one = made+1, recs[i]
		case errors.Is(err, sandbox.ErrBusy) && strings.Contains(err.Error(), "at most 5 API keys"):
			refused++
		default:
			t.Fatalf("create: %v", err)
		}
	}
	if made != 5 || refused != 3 || len(tn.Keys("team_a")) != 5 {
		t.Fatalf("8 creates at once: %d made, %d refused, %d listed; want 5, 3, 5", made, refused, len(tn.Keys("team_a")))
	}
	if _, _, err := tn.CreateKey(ctx, "team_b", "k", ""); err != nil {
		t.Fatalf("another team's key: %v", err)
	}
	if err := tn.RevokeKey(ctx, "team_a", one.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tn.CreateKey(ctx, "team_a", "k", ""); err != nil {
		t.Fatalf("a key after one was revoked: %v", err)
	}
}
