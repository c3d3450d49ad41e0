package sandbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/sbx-dev/sbx/internal/store"
)

// Owned returns the live sandbox id if team owns it. Another team's sandbox
// and an unknown id give the same error from the same code path, so an
// answer never tells whether an id exists elsewhere.
func (m *Manager) Owned(team, id string) (Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, ok := m.sandboxes[id]
	if !ok || sb.rec.Team != team {
		return Info{}, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	return m.infoLocked(sb), nil
}

// OwnedSnapshot returns the snapshot key (id or name) of team, with the
// same error for another team's and an unknown one. Names are per team:
// another team's snapshot of the same name is never it.
func (m *Manager) OwnedSnapshot(ctx context.Context, team, key string) (*store.Snapshot, error) {
	snap, err := m.store.TeamSnapshot(ctx, team, key)
	if errors.Is(err, store.ErrNotFound) || err == nil && snap.ForBuild {
		return nil, fmt.Errorf("snapshot %s: %w", key, ErrNotFound)
	}
	return snap, err
}

// teamOf is the team of live sandbox id ("" also when there is none: the
// caller fails on the id itself).
func (m *Manager) teamOf(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sb, ok := m.sandboxes[id]; ok {
		return sb.rec.Team
	}
	return ""
}
