package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrLeaseHeld is returned (wrapped) by Register while another holder's
// lease on the node id has not expired.
var ErrLeaseHeld = errors.New("store: node lease held")

// ErrFenced is returned (wrapped) for a write or renewal made with a lease
// that is no longer the node's current live one: it expired, was released,
// or a newer Register replaced it.
var ErrFenced = errors.New("store: fenced: node lease lost")

// Node is one daemon of a cluster as the registry holds it. The doc part is
// what the node reports; State, Token and the times are the lease's.
type Node struct {
	ID        string   `json:"id"`
	Address   string   `json:"address"` // the base URL other nodes reach it at
	Runtimes  []string `json:"runtimes"`
	Templates []string `json:"templates"` // built-in templates present on the node
	// Cached are the user templates (ids and names) whose latest build's
	// layers are all on the node; Pulls: the node fetches missing layers
	// from a template registry, so it can run any user template.
	Cached []string `json:"cached,omitempty"`
	Pulls  bool     `json:"pulls,omitempty"`
	// Warm counts the ready sandboxes of the node's warm pools by
	// "template:runtime"; DefaultRuntime is what a create naming none gets.
	Warm           map[string]int `json:"warm,omitempty"`
	DefaultRuntime string         `json:"defaultRuntime,omitempty"`
	Capacity       Capacity       `json:"capacity"`
	Used           Capacity       `json:"used"`
	// Storage is the id of the shared storage the node keeps paused images
	// and snapshots on ("" none): a paused sandbox on it can resume there.
	Storage string `json:"storage,omitempty"`

	State       string    `json:"-"` // live, released (stopped cleanly), expired (lost)
	Token       int64     `json:"-"` // fencing token of the current lease
	ExpiresAt   time.Time `json:"-"`
	HeartbeatAt time.Time `json:"-"`
}

// Capacity is CPU, memory and sandboxes, total or in use.
type Capacity struct {
	CPU       int `json:"cpu"`
	MemoryMB  int `json:"memoryMB"`
	Sandboxes int `json:"sandboxes"`
}

// Lease is a node's right to act on its records until Expires (by the
// database's clock). Token is unique and increases with every Register of
// any node, so a later lease always carries a larger token.
type Lease struct {
	Node    string
	Token   int64
	Expires time.Time
}

// nowSQL is the database's clock in Unix nanoseconds: leases are measured
// by one clock, not each node's.
func (d *db) nowSQL() string {
	return d.pick(`CAST(unixepoch('subsec')*1000000000 AS BIGINT)`,
		`CAST(EXTRACT(EPOCH FROM clock_timestamp())*1000000000 AS BIGINT)`)
}

// forUpdate is the row lock suffix of a select in a transaction (SQLite
// needs none: its transactions are serial).
func (d *db) forUpdate(mode string) string { return d.pick("", " FOR "+mode) }

// Register takes a new lease of ttl on n.ID with a new fencing token and
// records n. A live lease of the id that has not expired is ErrLeaseHeld;
// one that expired but was not yet collected is expired first (its
// sandboxes marked lost), as ExpireNodes would.
func (s *Store) Register(ctx context.Context, n *Node, ttl time.Duration) (Lease, error) {
	doc, err := json.Marshal(n)
	if err != nil {
		return Lease{}, fmt.Errorf("encode node %s: %w", n.ID, err)
	}
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Lease{}, err
	}
	defer t.Rollback() //nolint:errcheck // after Commit it is a no-op
	var state string
	var live bool
	err = t.QueryRowContext(ctx, `SELECT state, expires_at > `+s.db.nowSQL()+` FROM nodes WHERE id=?`+s.db.forUpdate("UPDATE"), n.ID).Scan(&state, &live)
	switch {
	case err == nil && state == "live" && live:
		return Lease{}, fmt.Errorf("node %s: %w", n.ID, ErrLeaseHeld)
	case err == nil && state == "live":
		if _, err := s.expireNode(ctx, t, n.ID); err != nil {
			return Lease{}, err
		}
	case err != nil && !isNoRows(err):
		return Lease{}, fmt.Errorf("register node %s: %w", n.ID, err)
	}
	l := Lease{Node: n.ID}
	if err := t.QueryRowContext(ctx, `UPDATE fencing SET last=last+1 WHERE id=1 RETURNING last`).Scan(&l.Token); err != nil {
		return Lease{}, fmt.Errorf("fencing token: %w", classify(err))
	}
	var exp int64
	err = t.QueryRowContext(ctx, `INSERT INTO nodes(id, state, token, expires_at, heartbeat_at, doc)
		VALUES(?, 'live', ?, `+s.db.nowSQL()+`+?, `+s.db.nowSQL()+`, ?)
		ON CONFLICT(id) DO UPDATE SET state=excluded.state, token=excluded.token,
		expires_at=excluded.expires_at, heartbeat_at=excluded.heartbeat_at, doc=excluded.doc
		RETURNING expires_at`, n.ID, l.Token, ttl.Nanoseconds(), doc).Scan(&exp)
	if err != nil {
		return Lease{}, fmt.Errorf("register node %s: %w", n.ID, classify(err))
	}
	l.Expires = time.Unix(0, exp).UTC()
	return l, classify(t.Commit())
}

// Renew extends l by ttl from now and records n (the node's current
// report). A lease that is not the node's live, unexpired one is ErrFenced.
func (s *Store) Renew(ctx context.Context, l Lease, n *Node, ttl time.Duration) (Lease, error) {
	doc, err := json.Marshal(n)
	if err != nil {
		return l, fmt.Errorf("encode node %s: %w", n.ID, err)
	}
	var exp int64
	err = s.db.QueryRowContext(ctx, `UPDATE nodes SET expires_at=`+s.db.nowSQL()+`+?, heartbeat_at=`+s.db.nowSQL()+`, doc=?
		WHERE id=? AND token=? AND state='live' AND expires_at > `+s.db.nowSQL()+` RETURNING expires_at`,
		ttl.Nanoseconds(), doc, l.Node, l.Token).Scan(&exp)
	if isNoRows(err) {
		return l, fmt.Errorf("renew node %s lease %d: %w", l.Node, l.Token, ErrFenced)
	}
	if err != nil {
		return l, fmt.Errorf("renew node %s: %w", l.Node, classify(err))
	}
	l.Expires = time.Unix(0, exp).UTC()
	return l, nil
}

// Release ends l now, for a node stopping cleanly: its records stay as
// they are (its sandboxes keep running) and its next Register takes over at
// once. Releasing a lease that is not live is ErrFenced.
func (s *Store) Release(ctx context.Context, l Lease) error {
	res, err := s.db.ExecContext(ctx, `UPDATE nodes SET state='released', expires_at=`+s.db.nowSQL()+`
		WHERE id=? AND token=? AND state='live'`, l.Node, l.Token)
	if err != nil {
		return fmt.Errorf("release node %s: %w", l.Node, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("release node %s lease %d: %w", l.Node, l.Token, ErrFenced)
	}
	return nil
}

// Nodes lists the registry, in id order.
func (s *Store) Nodes(ctx context.Context) ([]*Node, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, token, expires_at, heartbeat_at, doc FROM nodes ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	defer rows.Close()
	var out []*Node
	for rows.Next() {
		var n Node
		var exp, hb int64
		var doc []byte
		if err := rows.Scan(&n.State, &n.Token, &exp, &hb, &doc); err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		if err := json.Unmarshal(doc, &n); err != nil {
			return nil, fmt.Errorf("decode node record: %w", err)
		}
		n.ExpiresAt, n.HeartbeatAt = time.Unix(0, exp).UTC(), time.Unix(0, hb).UTC()
		out = append(out, &n)
	}
	return out, rows.Err()
}
