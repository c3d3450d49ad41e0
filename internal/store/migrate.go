package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// migration is one versioned step of the schema. A released migration is
// never edited: a change to the schema is a new migration.
type migration struct {
	version int
	name    string
	sql     string // in the SQLite/PostgreSQL common subset; see forDialect
}

// migrations is the schema, oldest first. Version 1 is the schema from
// before migrations existed (IF NOT EXISTS: a database of that time adopts it).
var migrations = []migration{
	{1, "records", `
CREATE TABLE IF NOT EXISTS sandboxes (
	id TEXT PRIMARY KEY, state TEXT NOT NULL, template TEXT NOT NULL,
	started_at BIGINT NOT NULL, end_at BIGINT NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS sandboxes_started ON sandboxes(started_at);
CREATE TABLE IF NOT EXISTS snapshots (
	id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at BIGINT NOT NULL, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS templates (id TEXT PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS builds (
	id TEXT PRIMARY KEY, template_id TEXT NOT NULL, created_at BIGINT NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS builds_template ON builds(template_id, created_at);
CREATE TABLE IF NOT EXISTS template_tags (
	template_id TEXT NOT NULL, tag TEXT NOT NULL, build_id TEXT NOT NULL, created_at BIGINT NOT NULL,
	PRIMARY KEY (template_id, tag));
CREATE TABLE IF NOT EXISTS volumes (
	id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL, UNIQUE(owner, name));
CREATE TABLE IF NOT EXISTS teams (id TEXT PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
	id TEXT PRIMARY KEY, team TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS template_owners (template_id TEXT PRIMARY KEY, team TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS secrets (
	id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL,
	sealed BLOB NOT NULL, UNIQUE(owner, name));
`},
	{2, "nodes and leases", `
ALTER TABLE sandboxes ADD COLUMN node TEXT NOT NULL DEFAULT '';
CREATE INDEX sandboxes_node ON sandboxes(node, started_at);
ALTER TABLE snapshots ADD COLUMN node TEXT NOT NULL DEFAULT '';
CREATE TABLE nodes (
	id TEXT PRIMARY KEY, state TEXT NOT NULL, token BIGINT NOT NULL,
	expires_at BIGINT NOT NULL, heartbeat_at BIGINT NOT NULL, doc TEXT NOT NULL);
CREATE TABLE fencing (id BIGINT PRIMARY KEY, last BIGINT NOT NULL);
INSERT INTO fencing(id, last) VALUES(1, 0);
`},
	{3, "sandbox tombstones", `
CREATE TABLE sandbox_ends (id TEXT PRIMARY KEY, node TEXT NOT NULL, ended_at BIGINT NOT NULL);
`},
	{4, "build nodes", `
ALTER TABLE builds ADD COLUMN node TEXT NOT NULL DEFAULT '';
`},
	{5, "shared storage", `
ALTER TABLE sandboxes ADD COLUMN storage TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN storage TEXT NOT NULL DEFAULT '';
`},
}

// forDialect adapts a migration's SQL: PostgreSQL compares TEXT in byte
// order (COLLATE "C"), as SQLite does, so listings sort the same on both,
// and spells BLOB BYTEA.
func forDialect(d dialect, q string) string {
	if d != postgres {
		return q
	}
	return strings.NewReplacer(" TEXT", ` TEXT COLLATE "C"`, " BLOB", " BYTEA").Replace(q)
}

// migrate applies the migrations d has not applied yet, in one transaction
// recorded in schema_migrations. On PostgreSQL a transaction-scoped advisory
// lock serialises nodes starting at once. A database whose schema is newer
// than this binary knows is refused.
func migrate(ctx context.Context, d *db) error {
	t, err := d.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer t.Rollback() //nolint:errcheck // after Commit it is a no-op
	if d.dialect == postgres {
		if _, err := t.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7386290211)`); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
	}
	if _, err := t.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("migrations table: %w", classify(err))
	}
	var have int
	if err := t.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if latest := migrations[len(migrations)-1].version; have > latest {
		return fmt.Errorf("database schema version %d is newer than this sbx knows (%d): upgrade sbx", have, latest)
	}
	for _, m := range migrations[have:] {
		if err := apply(ctx, t, d.dialect, m); err != nil {
			return err
		}
	}
	return classify(t.Commit())
}

func apply(ctx context.Context, t *tx, d dialect, m migration) error {
	if _, err := t.ExecContext(ctx, forDialect(d, m.sql)); err != nil {
		return fmt.Errorf("migration %d (%s): %w", m.version, m.name, classify(err))
	}
	if _, err := t.ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_at) VALUES(?,?,?)`,
		m.version, m.name, time.Now().UnixNano()); err != nil {
		return fmt.Errorf("record migration %d: %w", m.version, err)
	}
	return nil
}

// SchemaVersion returns the newest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
