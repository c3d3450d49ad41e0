package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ExpireNodes marks every live node whose lease has run out "expired" and
// its sandboxes lost, in one transaction, and returns the ids; it also
// drops tombstones older than tombstoneTTL. Any node may
// call it (each heartbeat does); a second call finds nothing to do.
func (s *Store) ExpireNodes(ctx context.Context) ([]string, error) {
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer t.Rollback() //nolint:errcheck // after Commit it is a no-op
	rows, err := t.QueryContext(ctx, `SELECT id FROM nodes WHERE state='live' AND expires_at <= `+s.db.nowSQL()+
		` ORDER BY id`+s.db.forUpdate("UPDATE"))
	if err != nil {
		return nil, fmt.Errorf("expired nodes: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, err := s.expireNode(ctx, t, id); err != nil {
			return nil, err
		}
	}
	if _, err := t.ExecContext(ctx, `DELETE FROM sandbox_ends WHERE ended_at < `+s.db.nowSQL()+`-?`, tombstoneTTL.Nanoseconds()); err != nil {
		return nil, fmt.Errorf("prune tombstones: %w", classify(err))
	}
	return ids, classify(t.Commit())
}

// expireNode marks node id expired and its sandboxes lost (in their state
// column and record), in t; it returns how many sandboxes it marked. A
// paused sandbox whose image is on shared storage is not lost with its
// node: it stays paused, for another node to take over (ClaimPaused).
func (s *Store) expireNode(ctx context.Context, t *tx, id string) (int64, error) {
	if _, err := t.ExecContext(ctx, `UPDATE nodes SET state='expired' WHERE id=?`, id); err != nil {
		return 0, fmt.Errorf("expire node %s: %w", id, classify(err))
	}
	res, err := t.ExecContext(ctx, `UPDATE sandboxes SET state='lost', doc=`+
		s.db.pick(`json_set(doc, '$.state', 'lost')`, `jsonb_set(doc::jsonb, '{state}', '"lost"')::text`)+
		` WHERE node=? AND state<>'lost' AND NOT (state='paused' AND storage<>'')`, id)
	if err != nil {
		return 0, fmt.Errorf("mark node %s sandboxes lost: %w", id, classify(err))
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// StateEnded is SandboxOwner's state for a sandbox deleted (killed, timed
// out) on a cluster node within tombstoneTTL.
const StateEnded = "ended"

// tombstoneTTL is how long an ended sandbox is remembered, as the node's
// own tombstones (internal/sandbox) are.
const tombstoneTTL = time.Hour

// SandboxOwner returns the node recording sandbox id and the record's
// state, across every node (for routing by id): a deleted one of the last
// hour is StateEnded, one never recorded ErrNotFound.
func (s *Store) SandboxOwner(ctx context.Context, id string) (node, state string, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT node, state FROM sandboxes WHERE id=?`, id).Scan(&node, &state)
	if isNoRows(err) {
		err = s.db.QueryRowContext(ctx, `SELECT node FROM sandbox_ends WHERE id=? AND ended_at > `+s.db.nowSQL()+`-?`,
			id, tombstoneTTL.Nanoseconds()).Scan(&node)
		state = StateEnded
	}
	if isNoRows(err) {
		return "", "", fmt.Errorf("sandbox %s: %w", id, ErrNotFound)
	}
	return node, state, err
}

// rowsOf is res's RowsAffected, 0 for a nil res.
func rowsOf(res sql.Result) (int64, error) {
	if res == nil {
		return 0, nil
	}
	return res.RowsAffected()
}
