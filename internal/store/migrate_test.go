package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func testMigrationsOnce(t *testing.T, b backend) {
	ctx := context.Background()
	for i, m := range migrations {
		if m.version != i+1 {
			t.Fatalf("migration %d has version %d: versions must be 1, 2, ... in order", i, m.version)
		}
	}
	target := b.target(t)
	for range 2 { // the second open applies nothing
		s := b.mustOpen(t, target)
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(migrations) {
			t.Fatalf("schema_migrations rows = %d, %v; want %d", n, err, len(migrations))
		}
		if v, err := s.SchemaVersion(ctx); err != nil || v != len(migrations) {
			t.Fatalf("SchemaVersion = %d, %v", v, err)
		}
		s.Close()
	}
}

func testNewerSchema(t *testing.T, b backend) {
	target := b.target(t)
	s := b.mustOpen(t, target)
	if _, err := s.db.ExecContext(context.Background(),
		`INSERT INTO schema_migrations(version, name, applied_at) VALUES(9999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := b.open(target); err == nil || !strings.Contains(err.Error(), "newer") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("open of a newer schema = %v, want refused", err)
	}
}

// testConcurrentOpen: nodes starting at once on one database all come up.
func testConcurrentOpen(t *testing.T, b backend) {
	target := b.target(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := b.open(target)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestRebind(t *testing.T) {
	d := &db{dialect: postgres}
	for in, want := range map[string]string{
		`SELECT a FROM t WHERE x=? AND y=?`:    `SELECT a FROM t WHERE x=$1 AND y=$2`,
		`SELECT '?' , "a?" FROM t WHERE z = ?`: `SELECT '?' , "a?" FROM t WHERE z = $1`,
		`SELECT 1`:                             `SELECT 1`,
	} {
		if got := d.rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (&db{dialect: sqlite}).rebind(`x=?`); got != `x=?` {
		t.Errorf("sqlite rebind changed the query: %q", got)
	}
}

// TestAdoptsPreMigrationDatabase: a SQLite database written before
// migrations existed (no schema_migrations, INTEGER columns) opens with its
// records and gets every migration recorded.
func TestAdoptsPreMigrationDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old, err := sql.Open("sqlite", filepath.Join(dir, "sbx.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE sandboxes (id TEXT PRIMARY KEY, state TEXT NOT NULL, template TEXT NOT NULL,
			started_at INTEGER NOT NULL, end_at INTEGER NOT NULL, doc TEXT NOT NULL)`,
		`CREATE TABLE snapshots (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL, doc TEXT NOT NULL)`,
		`INSERT INTO sandboxes VALUES('old', 'running', 'base', 1, 2, '{"id":"old","state":"running"}')`} {
		if _, err := old.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.Get(ctx, "old"); err != nil || r.State != "running" {
		t.Fatalf("old record: %+v, %v", r, err)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != len(migrations) {
		t.Fatalf("SchemaVersion = %d, %v", v, err)
	}
}
