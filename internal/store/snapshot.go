package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Persistence is the pause/resume part of a sandbox record.
type Persistence struct {
	AutoResume bool  `json:"autoResume,omitempty"` // traffic to it while paused resumes it
	TimeoutSec int64 `json:"timeoutSec,omitempty"` // the create timeout, reused by auto-resume
	// NoMemory makes the deadline's pause (autoPause) keep the files only
	// (autoPauseMemory: false, or a runtime without checkpoints).
	NoMemory bool `json:"noMemory,omitempty"`
	// Storage is the shared storage (its id: see Store.SetStorage) that
	// holds the paused image; "" is the node's own disk. A paused record
	// on shared storage outlives its node (ExpireNodes keeps it) and may be
	// taken over by another node with that storage (ClaimPaused).
	Storage string `json:"storage,omitempty"`
	// PauseDeferredSince is set while a running autoPause sandbox whose
	// deadline's pause was refused for want of disk runs on: the deadline
	// it first reached (its retries end PauseRetryFor after it). A new
	// deadline set by the caller, or the pause, clears it.
	PauseDeferredSince time.Time `json:"pauseDeferredSince,omitzero"`
	// Set while paused: when, the image's size, and whether it holds memory
	// (false: resume restarts the processes over the saved files).
	PausedAt    time.Time `json:"pausedAt,omitempty"`
	ImageBytes  int64     `json:"imageBytes,omitempty"`
	SavedMemory bool      `json:"savedMemory,omitempty"`
}

// Snapshot is the durable record of a named snapshot: a saved sandbox
// (memory and files) that new sandboxes start from.
type Snapshot struct {
	ID         string `json:"id"`
	Team       string `json:"team,omitempty"` // the source sandbox's team ("" = default)
	Name       string `json:"name,omitempty"`
	SandboxID  string `json:"sandboxID"` // the sandbox it was taken of
	TemplateID string `json:"templateID"`
	Build      string `json:"templateBuild,omitempty"`
	// ForBuild marks a template build's own snapshot (its start command
	// running and ready): not listed, removed with the build.
	ForBuild   bool              `json:"forBuild,omitempty"`
	Runtime    string            `json:"runtime"`
	CreatedAt  time.Time         `json:"createdAt"`
	CPUCount   int               `json:"cpuCount"`
	MemoryMB   int               `json:"memoryMB"`
	DiskSizeMB int               `json:"diskSizeMB"`
	InitSecret string            `json:"initSecret"` // the agent's /init secret, kept in its memory
	EnvVars    map[string]string `json:"envVars,omitempty"`
	Bytes      int64             `json:"bytes"` // disk held by the image
	// Storage is the shared storage holding the image ("" = the node's
	// disk); such a snapshot is seen by every node with that storage.
	Storage string `json:"storage,omitempty"`
}

// PutSnapshot inserts or replaces a snapshot record of s's node (fenced
// like Put). A snapshot whose image is node-local (Storage "") is seen by
// its node only; one on shared storage by every node with that storage.
func (s *Store) PutSnapshot(ctx context.Context, r *Snapshot) error {
	doc, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode snapshot %s: %w", r.ID, err)
	}
	_, err = s.write(ctx, func(q querier) (sql.Result, error) {
		return q.ExecContext(ctx,
			`INSERT INTO snapshots(id, name, created_at, doc, node, storage) VALUES(?,?,?,?,?,?)
			 ON CONFLICT(id) DO UPDATE SET name=excluded.name, created_at=excluded.created_at, doc=excluded.doc,
			 storage=excluded.storage WHERE snapshots.node=excluded.node`,
			r.ID, r.Name, r.CreatedAt.UnixNano(), doc, s.node(), r.Storage)
	})
	if err != nil {
		return fmt.Errorf("store snapshot %s: %w", r.ID, err)
	}
	return nil
}

// GetSnapshot returns the snapshot whose id is id. Names are never looked
// at: they are per team (TeamSnapshot), and a name may spell another
// record's id.
func (s *Store) GetSnapshot(ctx context.Context, id string) (*Snapshot, error) {
	return loadDoc[Snapshot](ctx, s.db, "snapshot", id,
		`SELECT doc FROM snapshots WHERE `+snapSeen+` AND id=?`, s.node(), s.storage(), id)
}

// TeamSnapshot returns team's snapshot whose id or name is key: its own of
// that id, else its newest of that name. Names are per team, as template
// names are: another team's record is never returned, whatever its id or
// name (ErrNotFound, as for a key nobody holds).
func (s *Store) TeamSnapshot(ctx context.Context, team, key string) (*Snapshot, error) {
	all, err := s.querySnapshots(ctx, `AND (id=? OR (name<>'' AND name=?)) ORDER BY created_at DESC, id`, key, key)
	if err != nil {
		return nil, err
	}
	return pickTeamSnapshot(all, team, key)
}

// pickTeamSnapshot is TeamSnapshot's choice among all (newest first), the
// records whose id or name is key.
func pickTeamSnapshot(all []*Snapshot, team, key string) (*Snapshot, error) {
	var named *Snapshot
	for _, r := range all {
		switch {
		case r.Team != team:
		case r.ID == key:
			return r, nil
		case named == nil:
			named = r
		}
	}
	if named == nil {
		return nil, fmt.Errorf("snapshot %s: %w", key, ErrNotFound)
	}
	return named, nil
}

// snapSeen is the condition (args: node, storage) for a snapshot record
// s sees: its node's own, and those on its shared storage.
const snapSeen = `(node=? OR (storage<>'' AND storage=?))`

// DeleteSnapshot removes a snapshot record s sees; a missing one is not
// an error.
func (s *Store) DeleteSnapshot(ctx context.Context, id string) error {
	if _, err := s.write(ctx, func(q querier) (sql.Result, error) {
		return q.ExecContext(ctx, `DELETE FROM snapshots WHERE id=? AND `+snapSeen, id, s.node(), s.storage())
	}); err != nil {
		return fmt.Errorf("delete snapshot %s: %w", id, err)
	}
	return nil
}

// ListSnapshots returns every snapshot record s sees, newest first.
func (s *Store) ListSnapshots(ctx context.Context) ([]*Snapshot, error) {
	return s.querySnapshots(ctx, `ORDER BY created_at DESC, id`)
}

// AllSnapshots returns the snapshot records of every node sharing the
// store, seen by s or not (a team's disk quota counts them all: on a
// cluster a node sees only its own and those on its shared storage).
func (s *Store) AllSnapshots(ctx context.Context) ([]*Snapshot, error) {
	return s.scanSnapshots(ctx, `SELECT doc FROM snapshots`)
}

// querySnapshots decodes the records s sees that rest (a condition after
// AND, and/or an ORDER BY) with args selects.
func (s *Store) querySnapshots(ctx context.Context, rest string, args ...any) ([]*Snapshot, error) {
	return s.scanSnapshots(ctx, `SELECT doc FROM snapshots WHERE `+snapSeen+` `+rest, append([]any{s.node(), s.storage()}, args...)...)
}

// scanSnapshots decodes the snapshot records query selects.
func (s *Store) scanSnapshots(ctx context.Context, query string, args ...any) ([]*Snapshot, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	defer rows.Close()
	var out []*Snapshot
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("list snapshots: %w", err)
		}
		var r Snapshot
		if err := json.Unmarshal(doc, &r); err != nil {
			return nil, fmt.Errorf("decode snapshot record: %w", err)
		}
		out = append(out, &r)
	}
	return out, rows.Err()
}
