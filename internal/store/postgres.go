package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// OpenPostgres opens the PostgreSQL database at url (postgres://...), the
// shared state of a cluster, and applies the schema migrations it lacks
// (nodes starting at once serialise on an advisory lock). It fails if the
// server cannot be reached within ctx.
func OpenPostgres(ctx context.Context, url string) (*Store, error) {
	pdb, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	pdb.SetMaxOpenConns(16)
	pdb.SetConnMaxIdleTime(5 * time.Minute)
	if err := pdb.PingContext(ctx); err != nil {
		pdb.Close()
		return nil, fmt.Errorf("connect postgres store: %w", err)
	}
	return open(ctx, &db{DB: pdb, dialect: postgres})
}

// pgDiskFull is PostgreSQL's SQLSTATE for disk_full (class 53,
// insufficient resources).
const pgDiskFull = "53100"

// pgCode returns the SQLSTATE of a PostgreSQL error, "" for any other error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
