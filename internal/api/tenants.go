package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/telemetry"
)

// DefaultTeam is the admin keys' team as the API shows it; in records it
// is "" so that everything written before teams existed belongs to it.
const DefaultTeam = telemetry.DefaultTeam

// Tenants holds the teams and their API keys: records in the store, a
// cache in memory that every request reads (a map keyed by the key's
// SHA-256), and last-used times flushed to the store in batches.
type Tenants struct {
	st       *store.Store
	log      *slog.Logger
	Defaults store.Quota // per-team quota where a team sets none

	// Shared says the store is a cluster's: other nodes change teams and
	// keys under this one, and Run reloads them every refreshEvery
	// (refresh.go). Set before Run.
	Shared bool

	// mu guards byHash, teams, gen and each entry's rec. Revoking a key or
	// removing a team holds it across the store write, so no request is
	// authenticated by a key between its deletion and the answer.
	mu     sync.RWMutex
	byHash map[[sha256.Size]byte]*keyEntry
	teams  map[string]*store.Team
	gen    uint64 // changes made through this node (Refresh keeps none it raced)
	// creating serialises CreateKey, so that its count of a team's keys
	// still holds when the new one is added (mu is not held across the
	// store write, which every authenticated request would wait for).
	creating sync.Mutex
	// naming serialises PutTeam, so that a name found free (nameFree) is
	// still free when the team is stored.
	naming sync.Mutex

	quota quotaState
}

// maxKeysPerTeam bounds a team's API keys: every key is held in memory
// and looked up on each request, and GET /api-keys lists them all.
var maxKeysPerTeam = 1000 // a var for tests

// keyEntry is a cached key record; used is its unflushed last use (unix ns).
type keyEntry struct {
	rec  store.APIKey
	hash [sha256.Size]byte
	used atomic.Int64
}

// LoadTenants reads every team and key from st.
func LoadTenants(ctx context.Context, st *store.Store, log *slog.Logger) (*Tenants, error) {
	t := &Tenants{st: st, log: log, byHash: map[[sha256.Size]byte]*keyEntry{}, teams: map[string]*store.Team{}}
	if err := t.Refresh(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Tenants) add(k store.APIKey) {
	e := &keyEntry{rec: k}
	b, _ := hex.DecodeString(k.Hash)
	copy(e.hash[:], b)
	t.byHash[e.hash] = e
}

// lookup returns the principal of a team key. The map is keyed by the
// SHA-256 of a 160-bit random key, so its timing tells nothing about a
// valid key; the final comparison is constant-time anyway.
func (t *Tenants) lookup(key string) (Principal, bool) {
	if t == nil || key == "" {
		return Principal{}, false
	}
	h := sha256.Sum256([]byte(key))
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.byHash[h]
	if !ok || subtle.ConstantTimeCompare(h[:], e.hash[:]) != 1 {
		return Principal{}, false
	}
	e.used.Store(time.Now().UnixNano())
	return Principal{Team: e.rec.Team, KeyID: e.rec.ID}, true
}

// Run flushes last-used times every interval until ctx ends, then once
// more; a Shared node also reloads teams and keys every refreshEvery.
func (t *Tenants) Run(ctx context.Context, interval time.Duration) {
	tk := time.NewTicker(interval)
	defer tk.Stop()
	var refresh <-chan time.Time
	if t.Shared {
		rt := time.NewTicker(refreshEvery)
		defer rt.Stop()
		refresh = rt.C
	}
	for {
		select {
		case <-ctx.Done():
			t.flush(context.WithoutCancel(ctx))
			return
		case <-tk.C:
			t.flush(ctx)
		case <-refresh:
			if err := t.Refresh(ctx); err != nil && ctx.Err() == nil {
				t.log.Warn("reload teams and api keys", "err", err)
			}
		}
	}
}

// flush writes the last-used times that changed since the previous flush:
// one store write per used key per interval, never one per request. A key
// revoked meanwhile stays revoked (UpdateAPIKey, not an upsert).
func (t *Tenants) flush(ctx context.Context) {
	t.mu.Lock()
	var dirty []store.APIKey
	for _, e := range t.byHash {
		if u := e.used.Swap(0); u != 0 {
			e.rec.LastUsed = time.Unix(0, u).UTC()
			dirty = append(dirty, e.rec)
		}
	}
	t.mu.Unlock()
	for i := range dirty {
		if err := t.st.UpdateAPIKey(ctx, &dirty[i]); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.log.Warn("api key last-used not saved", "key", dirty[i].ID, "err", err)
		}
	}
}

// newKeyRecord mints a key for team: the key (shown once) and its record.
func newKeyRecord(team, name, by string) (string, store.APIKey) {
	key := newKey()
	h := sha256.Sum256([]byte(key))
	return key, store.APIKey{
		ID: newUUID(), Team: team, Name: name, Hash: hex.EncodeToString(h[:]), Prefix: "e2b_",
		Suffix: key[len(key)-4:], Length: len(key) - len("e2b_"), CreatedAt: time.Now().UTC(), CreatedBy: by,
	}
}

// CreateKey mints and stores a key of team; the key is returned once.
// A team holding maxKeysPerTeam keys gets a quota error (429).
func (t *Tenants) CreateKey(ctx context.Context, team, name, by string) (string, store.APIKey, error) {
	t.creating.Lock()
	defer t.creating.Unlock()
	if n := t.keyCount(team); n >= maxKeysPerTeam {
		return "", store.APIKey{}, fmt.Errorf("%w; delete some (DELETE /api-keys/{id})", quotaErr("API keys", maxKeysPerTeam))
	}
	key, rec := newKeyRecord(team, name, by)
	if err := t.st.PutAPIKey(ctx, &rec); err != nil {
		return "", rec, err
	}
	t.mu.Lock()
	t.add(rec)
	t.gen++
	t.mu.Unlock()
	return key, rec, nil
}

// keyCount counts team's keys.
func (t *Tenants) keyCount(team string) int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for _, e := range t.byHash {
		if e.rec.Team == team {
			n++
		}
	}
	return n
}

// Keys lists the key records of team with their latest use.
func (t *Tenants) Keys(team string) []store.APIKey {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := []store.APIKey{}
	for _, e := range t.byHash {
		if e.rec.Team == team {
			r := e.rec
			if u := e.used.Load(); u != 0 {
				r.LastUsed = time.Unix(0, u).UTC()
			}
			out = append(out, r)
		}
	}
	sortKeys(out)
	return out
}

// RenameKey renames key id of team (another team's key is not found).
func (t *Tenants) RenameKey(ctx context.Context, team, id, name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.byHash {
		if e.rec.ID == id && e.rec.Team == team {
			r := e.rec
			r.Name = name
			if err := t.st.UpdateAPIKey(ctx, &r); err != nil {
				if errors.Is(err, store.ErrNotFound) { // revoked through another node
					return keyNotFound(id)
				}
				return err
			}
			e.rec = r
			t.gen++
			return nil
		}
	}
	return keyNotFound(id)
}

// RevokeKey deletes key id of team: once it returns, the key is refused.
func (t *Tenants) RevokeKey(ctx context.Context, team, id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for h, e := range t.byHash {
		if e.rec.ID == id && e.rec.Team == team {
			if err := t.st.DeleteAPIKey(ctx, team, id); err != nil {
				return err
			}
			delete(t.byHash, h)
			t.gen++
			return nil
		}
	}
	return keyNotFound(id)
}

func keyNotFound(id string) error {
	return sandbox.NotFound("API key %q not found", truncate(id, 64))
}

func newUUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	x := hex.EncodeToString(b)
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// team returns a copy of team id's record.
func (t *Tenants) team(id string) (*store.Team, bool) {
	if t == nil {
		return nil, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	tm, ok := t.teams[id]
	if !ok {
		return nil, false
	}
	c := *tm
	return &c, true
}

// Teams lists copies of every team record.
func (t *Tenants) Teams() []store.Team {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]store.Team, 0, len(t.teams))
	for _, tm := range t.teams {
		out = append(out, *tm)
	}
	return out
}

// CreateTeam stores a new team and mints its first key (returned once).
func (t *Tenants) CreateTeam(ctx context.Context, tm *store.Team, by string) (string, store.APIKey, error) {
	if err := t.PutTeam(ctx, tm); err != nil {
		return "", store.APIKey{}, err
	}
	return t.CreateKey(ctx, tm.ID, "first key", by)
}

// PutTeam stores a team record (new or changed). A name another team (or
// the default team) has is ErrConflict; the name's form is the caller's
// to check (checkTeamName), on create and rename only.
func (t *Tenants) PutTeam(ctx context.Context, tm *store.Team) error {
	t.naming.Lock()
	defer t.naming.Unlock()
	if err := t.nameFree(tm); err != nil {
		return err
	}
	if err := t.st.PutTeam(ctx, tm); err != nil {
		return err
	}
	c := *tm
	t.mu.Lock()
	t.teams[tm.ID] = &c
	t.gen++
	t.mu.Unlock()
	return nil
}

// DeleteTeam removes team id and its keys: once it returns, they are refused.
func (t *Tenants) DeleteTeam(ctx context.Context, id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.st.DeleteTeam(ctx, id); err != nil {
		return err
	}
	delete(t.teams, id)
	t.gen++
	for h, e := range t.byHash {
		if e.rec.Team == id {
			delete(t.byHash, h)
		}
	}
	return nil
}
