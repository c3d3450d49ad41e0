package api

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// refreshEvery is how often a cluster node reloads teams and keys: a key
// revoked, a team deleted or its quota changed through another node is
// refused or applied here within it, and a team or key created there is
// accepted here. (Before, a node read them once at start: a key revoked
// through one node went on working on the others until they restarted.)
var refreshEvery = 2 * time.Second // a var for tests

// Refresh reloads every team and key from the store. Last-used times not
// yet flushed are kept for the keys still there. A change made through
// this node while the store was read (gen moved) keeps the cache as it is:
// the next Refresh reads that change too.
func (t *Tenants) Refresh(ctx context.Context) error {
	t.mu.RLock()
	gen := t.gen
	t.mu.RUnlock()
	teams, err := t.st.Teams(ctx)
	if err != nil {
		return fmt.Errorf("load teams: %w", err)
	}
	keys, err := t.st.APIKeys(ctx)
	if err != nil {
		return fmt.Errorf("load api keys: %w", err)
	}
	t.install(gen, teams, keys)
	return nil
}

// install replaces the cache with teams and keys, read from the store when
// the cache's generation was gen, unless a change was made since.
func (t *Tenants) install(gen uint64, teams []*store.Team, keys []*store.APIKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen != gen {
		return
	}
	old := t.byHash
	t.byHash = make(map[[sha256.Size]byte]*keyEntry, len(keys))
	for _, k := range keys {
		t.add(*k)
	}
	for h, e := range t.byHash {
		if o, ok := old[h]; ok {
			e.used.Store(o.used.Load())
		}
	}
	t.teams = make(map[string]*store.Team, len(teams))
	for _, tm := range teams {
		t.teams[tm.ID] = tm
	}
}
