// Package store keeps the daemon's durable state in an embedded SQLite
// database (pure Go driver, so the daemon stays CGO_ENABLED=0) or, for a
// cluster, in PostgreSQL (pgx). Every write is one transaction; SQLite runs
// in WAL mode with synchronous=FULL so a kill -9 of the daemon never loses a
// committed sandbox record. The schema is versioned (migrate.go).
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNotFound is returned (wrapped) for an unknown record.
var ErrNotFound = errors.New("store: not found")

// ErrFull is returned (wrapped) when a write fails because the disk holding
// the database is full (SQLITE_FULL, PostgreSQL's disk_full, or ENOSPC). Nothing was written.
var ErrFull = errors.New("store: disk full")

// sqliteFull is SQLite's result code for "database or disk is full".
const sqliteFull = 13

// sqliteBusy is SQLite's result code for "database is locked".
const sqliteBusy = 5

// classify wraps ErrFull around err when it is a disk-full error.
func classify(err error) error {
	var coded interface{ Code() int }
	if errors.Is(err, syscall.ENOSPC) || errors.As(err, &coded) && coded.Code()&0xff == sqliteFull ||
		pgCode(err) == pgDiskFull {
		return fmt.Errorf("%w: %w", ErrFull, err)
	}
	return err
}

// Store is the durable state of a node: SQLite (Open, the single-node
// default) or PostgreSQL shared by the nodes of a cluster (OpenPostgres),
// one type with the same methods and contracts on both. It is safe for concurrent use.
type Store struct {
	db     *db
	fence  *fence       // nil: the single-node store (see Fence)
	shared string       // shared storage id (SetStorage); "" none
	gc     *groupCommit // batches write on the single-node SQLite store; nil on PostgreSQL
	// OnWrite observes each sandbox record write (op: put, delete) for
	// metrics; set it before use, nil: none.
	OnWrite func(op string, d time.Duration, err error)
}

// observe reports a write to OnWrite.
func (s *Store) observe(op string, t0 time.Time, err error) {
	if s.OnWrite != nil {
		s.OnWrite(op, time.Since(t0), err)
	}
}

// Open opens (creating if needed) the SQLite database in dir, the
// single-node default, and applies the schema migrations it lacks.
func Open(dir string) (*Store, error) {
	if err := privateFiles(filepath.Join(dir, "sbx.db")); err != nil {
		return nil, err
	}
	dsn := "file:" + filepath.Join(dir, "sbx.db") +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"
	for wait, deadline := 10*time.Millisecond, time.Now().Add(openBusyWait); ; wait *= 2 {
		s, err := openSQLite(dsn)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return s, err
		}
		time.Sleep(wait)
	}
}

// openBusyWait bounds how long Open retries a database that answers
// SQLITE_BUSY: processes opening one database at once can get it straight
// away, without the busy timeout's wait (in about one in thirty tries of
// four concurrent first opens of a new database, one did).
const openBusyWait = 10 * time.Second

func openSQLite(dsn string) (*Store, error) {
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	sdb.SetMaxOpenConns(1) // SQLite has one writer; serialising here avoids SQLITE_BUSY storms
	s, err := open(context.Background(), &db{DB: sdb, dialect: sqlite})
	if err != nil {
		return nil, err
	}
	s.gc = newGroupCommit(s.db)
	return s, nil
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqliteBusy
}

// open migrates d and wraps it in a Store; d is closed on failure.
func open(ctx context.Context, d *db) (*Store, error) {
	if err := migrate(ctx, d); err != nil {
		d.Close()
		return nil, fmt.Errorf("init store schema: %w", err)
	}
	return &Store{db: d}, nil
}

// Close closes the database (after the batch of writes in flight).
func (s *Store) Close() error {
	if s.gc != nil {
		s.gc.stop()
	}
	return s.db.Close()
}

// Put inserts or replaces a sandbox record of s's node (fenced: with its
// lease live, else ErrFenced). A record whose State is not one of the
// known states is refused (ErrBadState) and nothing is written; an id
// recorded by another node is ErrExists.
func (s *Store) Put(ctx context.Context, r *Sandbox) (err error) {
	if _, err := ParseState(string(r.State)); err != nil {
		return fmt.Errorf("store sandbox %s: %w", r.ID, err)
	}
	doc, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode sandbox %s: %w", r.ID, err)
	}
	t0 := time.Now()
	defer func() { s.observe("put", t0, err) }()
	res, err := s.write(ctx, func(q querier) (sql.Result, error) {
		return q.ExecContext(ctx,
			`INSERT INTO sandboxes(id, state, template, started_at, end_at, doc, node, storage) VALUES(?,?,?,?,?,?,?,?)
			 ON CONFLICT(id) DO UPDATE SET state=excluded.state, template=excluded.template,
			 started_at=excluded.started_at, end_at=excluded.end_at, doc=excluded.doc, storage=excluded.storage
			 WHERE sandboxes.node=excluded.node`,
			r.ID, r.State.String(), r.TemplateID, r.StartedAt.UnixNano(), r.EndAt.UnixNano(), doc, s.node(), r.Persist.Storage)
	})
	if err != nil {
		return fmt.Errorf("store sandbox %s: %w", r.ID, classify(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store sandbox %s: another node's record: %w", r.ID, ErrExists)
	}
	return nil
}

// Get returns one sandbox record of s's node.
func (s *Store) Get(ctx context.Context, id string) (*Sandbox, error) {
	var doc []byte
	err := s.db.QueryRowContext(ctx, `SELECT doc FROM sandboxes WHERE id=? AND node=?`, id, s.node()).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sandbox %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load sandbox %s: %w", id, err)
	}
	return decode(doc)
}

// Delete removes a sandbox record; deleting a missing record is not an
// error. On a cluster (fenced) store it leaves a tombstone, so the front
// can tell an ended sandbox from an unknown one (SandboxOwner).
func (s *Store) Delete(ctx context.Context, id string) error {
	_, err := s.Remove(ctx, id)
	return err
}

// Remove is Delete that also tells whether s's node had the record (a
// caller about to delete what the record owns on shared storage must know
// that the record was its own: another node may have taken it over).
func (s *Store) Remove(ctx context.Context, id string) (bool, error) {
	t0 := time.Now()
	res, err := s.write(ctx, func(q querier) (sql.Result, error) {
		res, err := q.ExecContext(ctx, `DELETE FROM sandboxes WHERE id=? AND node=?`, id, s.node())
		if n, _ := rowsOf(res); err == nil && n > 0 && s.fence != nil {
			_, err = q.ExecContext(ctx, `INSERT INTO sandbox_ends(id, node, ended_at) VALUES(?,?,`+s.db.nowSQL()+`)
				ON CONFLICT(id) DO NOTHING`, id, s.node())
		}
		return res, err
	})
	s.observe("delete", t0, err)
	if err != nil {
		return false, fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	n, _ := rowsOf(res)
	return n > 0, nil
}

// List returns every sandbox record of s's node, oldest first.
func (s *Store) List(ctx context.Context) ([]*Sandbox, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT doc FROM sandboxes WHERE node=? ORDER BY started_at, id`, s.node())
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	defer rows.Close()
	var out []*Sandbox
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("list sandboxes: %w", err)
		}
		r, err := decode(doc)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// decode reads a stored record; one in an unknown state is an error
// (ErrBadState), never a record the manager would misread.
func decode(doc []byte) (*Sandbox, error) {
	var r Sandbox
	if err := json.Unmarshal(doc, &r); err != nil {
		return nil, fmt.Errorf("decode sandbox record: %w", err)
	}
	if _, err := ParseState(string(r.State)); err != nil {
		return nil, fmt.Errorf("decode sandbox record %s: %w", r.ID, err)
	}
	return &r, nil
}

// Sandbox is the durable record of one sandbox.
type Sandbox struct {
	ID          string            `json:"id"`
	Team        string            `json:"team,omitempty"` // owner; "" = the default (admin) team
	State       State             `json:"state"`          // see state.go
	TemplateID  string            `json:"templateID"`
	Build       string            `json:"templateBuild,omitempty"` // the template build it runs on (its layers)
	Alias       string            `json:"alias,omitempty"`
	Runtime     string            `json:"runtime"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	EnvVars     map[string]string `json:"envVars,omitempty"`
	EnvdToken   string            `json:"envdToken"`
	TrafficTok  string            `json:"trafficToken,omitempty"`
	InitSecret  string            `json:"initSecret"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int               `json:"memoryMB"`
	DiskSizeMB  int               `json:"diskSizeMB"`
	SandboxIP   string            `json:"sandboxIP,omitempty"`
	AutoPause   bool              `json:"autoPause,omitempty"`
	AllowNet    *bool             `json:"allowInternetAccess,omitempty"`
	Network     *Network          `json:"network,omitempty"` // see network.go
	LifecycleID string            `json:"lifecycleID,omitempty"`
	Persist     Persistence       `json:"persist,omitempty"` // pause/resume, see snapshot.go
	Volumes     []VolumeMount     `json:"volumes,omitempty"` // see volumes.go
}
