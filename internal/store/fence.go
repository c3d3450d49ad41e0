package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// fence scopes a Store to one node of a cluster: its sandbox and snapshot
// records are the node's own, and every write to them first checks, in the
// same transaction, that the lease with this token is still the node's
// live, unexpired one (on PostgreSQL holding the node row FOR SHARE, so
// ExpireNodes cannot mark the records lost in between).
type fence struct {
	node  string
	token int64
}

// SetStorage names the shared storage (an id the storage itself holds,
// the same on every node that mounts it) this node keeps paused images and
// snapshots on: snapshot records on it are seen by every such node, and
// paused records on it may be taken over (ClaimPaused). Call it before s is
// used; "" (the default) is none.
func (s *Store) SetStorage(id string) { s.shared = id }

// storage is s's shared storage id; "" (none) matches no shared record,
// as the queries also want storage<>”.
func (s *Store) storage() string { return s.shared }

// Fence scopes s to l's node and guards its sandbox and snapshot writes
// with l's fencing token; once l is lost they fail with ErrFenced. Call it
// before s is used (it is not synchronised); a Store never fenced is the
// single-node store of node "".
func (s *Store) Fence(l Lease) { s.fence = &fence{node: l.Node, token: l.Token} }

// node is the id whose sandbox and snapshot records s reads and writes.
func (s *Store) node() string {
	if s.fence == nil {
		return ""
	}
	return s.fence.node
}

// write runs f in a transaction that first checks s's lease (unfenced: on
// the database directly, as a single statement, or on SQLite batched with
// the writes waiting beside it, groupCommit). It returns once f's write is
// committed.
func (s *Store) write(ctx context.Context, f func(q querier) (sql.Result, error)) (sql.Result, error) {
	if s.fence == nil {
		if s.gc != nil {
			return s.gc.write(ctx, f)
		}
		return f(s.db)
	}
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer t.Rollback() //nolint:errcheck // after Commit it is a no-op
	var one int
	err = t.QueryRowContext(ctx, `SELECT 1 FROM nodes WHERE id=? AND token=? AND state='live' AND expires_at > `+
		s.db.nowSQL()+s.db.forUpdate("SHARE"), s.fence.node, s.fence.token).Scan(&one)
	if isNoRows(err) {
		return nil, fmt.Errorf("node %s lease %d: %w", s.fence.node, s.fence.token, ErrFenced)
	}
	if err != nil {
		return nil, fmt.Errorf("check lease: %w", err)
	}
	res, err := f(t)
	if err != nil {
		return nil, err
	}
	return res, t.Commit()
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
