package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Paused sandboxes on shared storage. A node given a shared storage
// (SetStorage) writes its paused images there and records the storage in
// the record (Persistence.Storage, and the storage column). Such a record
// is not lost with its node (ExpireNodes keeps it paused); while its node
// holds no live lease, any node with the same storage may take it over
// (ClaimPaused) and resume it. Resuming first moves the record from paused
// to resuming (Transition), so a record is restored by one node at most.

// ErrChanged is returned (wrapped) by Transition when the record is no
// longer in the expected state, or no longer the node's.
var ErrChanged = errors.New("store: record changed")

// ErrOwnerLive is returned (wrapped) by ClaimPaused when the sandbox's
// node still holds a live lease: it is that node's to serve.
var ErrOwnerLive = errors.New("store: the sandbox's node is live")

// liveNode is the condition (arg: node id) that a node holds a live lease.
func (d *db) liveNode(col string) string {
	return `EXISTS (SELECT 1 FROM nodes WHERE nodes.id=` + col + ` AND nodes.state='live' AND nodes.expires_at > ` + d.nowSQL() + `)`
}

// Movable returns the record of sandbox id if any node could take it over
// now: paused, on shared storage, its node holding no live lease. Unscoped
// (the API front places it with this); else ErrNotFound.
func (s *Store) Movable(ctx context.Context, id string) (*Sandbox, error) {
	var doc []byte
	err := s.db.QueryRowContext(ctx, `SELECT doc FROM sandboxes WHERE id=? AND state='paused' AND storage<>'' AND NOT `+
		s.db.liveNode("sandboxes.node"), id).Scan(&doc)
	if isNoRows(err) {
		return nil, fmt.Errorf("movable sandbox %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("movable sandbox %s: %w", id, err)
	}
	return decode(doc)
}

// ClaimPaused makes sandbox id this node's (fenced): it must be paused on
// this node's shared storage and may (given its record) allow it, else
// ErrNotFound (one answer for all of these); its node must hold no live
// lease, else
// ErrOwnerLive. The old node's row is locked meanwhile, so it cannot
// register again in between and re-adopt the record. A record already this
// node's is returned as is. Only a fenced store (a cluster node) claims.
func (s *Store) ClaimPaused(ctx context.Context, id string, may func(*Sandbox) bool) (*Sandbox, error) {
	if s.fence == nil || s.shared == "" {
		return nil, fmt.Errorf("claim sandbox %s: %w", id, ErrNotFound)
	}
	var rec *Sandbox
	_, err := s.write(ctx, func(q querier) (sql.Result, error) {
		var owner string
		var doc []byte
		err := q.QueryRowContext(ctx, `SELECT node, doc FROM sandboxes WHERE id=? AND state='paused' AND storage=?`+
			s.db.forUpdate("UPDATE"), id, s.shared).Scan(&owner, &doc)
		if isNoRows(err) {
			return nil, ErrNotFound
		}
		if err == nil {
			rec, err = decode(doc)
		}
		if err != nil || !may(rec) {
			return nil, errors.Join(err, ErrNotFound)
		}
		if owner == s.node() {
			return nil, nil
		}
		var live bool
		err = q.QueryRowContext(ctx, `SELECT state='live' AND expires_at > `+s.db.nowSQL()+` FROM nodes WHERE id=?`+
			s.db.forUpdate("UPDATE"), owner).Scan(&live)
		if err != nil && !isNoRows(err) {
			return nil, err
		}
		if live {
			return nil, fmt.Errorf("node %s: %w", owner, ErrOwnerLive)
		}
		return q.ExecContext(ctx, `UPDATE sandboxes SET node=? WHERE id=?`, s.node(), id)
	})
	if err != nil {
		return nil, fmt.Errorf("claim sandbox %s: %w", id, err)
	}
	return rec, nil
}

// Transition writes r (fenced) only if s's node's record of it is still in
// state from; else ErrChanged and nothing is written.
func (s *Store) Transition(ctx context.Context, r *Sandbox, from State) error {
	if _, err := ParseState(string(r.State)); err != nil {
		return fmt.Errorf("store sandbox %s: %w", r.ID, err)
	}
	doc, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode sandbox %s: %w", r.ID, err)
	}
	res, err := s.write(ctx, func(q querier) (sql.Result, error) {
		return q.ExecContext(ctx, `UPDATE sandboxes SET state=?, end_at=?, doc=?, storage=? WHERE id=? AND node=? AND state=?`,
			r.State.String(), r.EndAt.UnixNano(), doc, r.Persist.Storage, r.ID, s.node(), from.String())
	})
	if err != nil {
		return fmt.Errorf("store sandbox %s: %w", r.ID, classify(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sandbox %s is no longer %s here: %w", r.ID, from, ErrChanged)
	}
	return nil
}

// SharedImages lists the ids of the sandbox and snapshot records (any
// node's) on s's shared storage: what its images there belong to.
func (s *Store) SharedImages(ctx context.Context) (sandboxes, snapshots map[string]bool, err error) {
	sandboxes, err = s.ids(ctx, `SELECT id FROM sandboxes WHERE storage<>'' AND storage=?`, s.shared)
	if err == nil {
		snapshots, err = s.ids(ctx, `SELECT id FROM snapshots WHERE storage<>'' AND storage=?`, s.shared)
	}
	return sandboxes, snapshots, err
}

// ids runs q and returns the first column of its rows as a set.
func (s *Store) ids(ctx context.Context, q string, args ...any) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list ids: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// SnapshotHome returns team's snapshot, any node's, whose id or name is key
// (as TeamSnapshot picks it: names are per team), and the node that made it
// (the API front places creates from it, and routes its deletion: a
// snapshot on a node's own disk is that node's, one on shared storage any
// node's with it); else ErrNotFound.
func (s *Store) SnapshotHome(ctx context.Context, team, key string) (*Snapshot, string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT node, doc FROM snapshots WHERE id=? OR (name<>'' AND name=?)
		ORDER BY created_at DESC, id`, key, key)
	if err != nil {
		return nil, "", fmt.Errorf("load snapshot %s: %w", key, err)
	}
	defer rows.Close()
	var all []*Snapshot
	homes := map[*Snapshot]string{}
	for rows.Next() {
		var node string
		var doc []byte
		var snap Snapshot
		if err := rows.Scan(&node, &doc); err != nil {
			return nil, "", fmt.Errorf("load snapshot %s: %w", key, err)
		}
		if err := json.Unmarshal(doc, &snap); err != nil {
			return nil, "", fmt.Errorf("decode snapshot record: %w", err)
		}
		all = append(all, &snap)
		homes[&snap] = node
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("load snapshot %s: %w", key, err)
	}
	snap, err := pickTeamSnapshot(all, team, key)
	if err != nil {
		return nil, "", err
	}
	return snap, homes[snap], nil
}

// KeyTeam is the team of the API key whose hex SHA-256 is hash; "" (the
// default team's, as the admin keys, which are not in the store) when no
// key has it.
func (s *Store) KeyTeam(ctx context.Context, hash string) (string, error) {
	var team string
	err := s.db.QueryRowContext(ctx, `SELECT team FROM api_keys WHERE hash=?`, hash).Scan(&team)
	if isNoRows(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("load api key: %w", err)
	}
	return team, nil
}

// MovableIDs lists (up to limit) the paused sandboxes on s's shared
// storage whose node holds no live lease: those any node with the storage
// may take over now (ClaimPaused).
func (s *Store) MovableIDs(ctx context.Context, limit int) ([]string, error) {
	if s.shared == "" {
		return nil, nil
	}
	set, err := s.ids(ctx, `SELECT id FROM sandboxes WHERE state='paused' AND storage=? AND NOT `+
		s.db.liveNode("sandboxes.node")+` ORDER BY id LIMIT ?`, s.shared, limit)
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	return out, err
}
