package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// dialect names the SQL back end a Store runs on. The store's queries are
// written once, in the subset SQLite and PostgreSQL share, with `?`
// placeholders; a PostgreSQL db rebinds them to $1, $2, ...
type dialect int

const (
	sqlite dialect = iota
	postgres
)

// db is a *sql.DB whose queries are rebound for its dialect. Its methods
// have database/sql's names and contracts.
type db struct {
	*sql.DB
	dialect dialect
}

// querier is what the generic record helpers need: a db or a tx.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

func (d *db) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return d.DB.ExecContext(ctx, d.rebind(q), args...)
}

func (d *db) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return d.DB.QueryContext(ctx, d.rebind(q), args...)
}

func (d *db) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, d.rebind(q), args...)
}

// BeginTx starts a transaction whose queries are rebound like d's.
func (d *db) BeginTx(ctx context.Context, opts *sql.TxOptions) (*tx, error) {
	t, err := d.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &tx{Tx: t, d: d}, nil
}

// tx is a *sql.Tx of a db, rebinding like it.
type tx struct {
	*sql.Tx
	d *db
}

func (t *tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.d.rebind(q), args...)
}

func (t *tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.d.rebind(q), args...)
}

func (t *tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.d.rebind(q), args...)
}

// rebind turns the `?` placeholders of q (outside quoted literals) into
// PostgreSQL's $n; SQLite takes q as is.
func (d *db) rebind(q string) string {
	if d.dialect != postgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n, quoted := 0, byte(0)
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quoted != 0:
			if c == quoted {
				quoted = 0
			}
		case c == '\'' || c == '"':
			quoted = c
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// pick returns the query of d's dialect, for the few statements the two
// back ends spell differently.
func (d *db) pick(sqliteQ, postgresQ string) string {
	if d.dialect == postgres {
		return postgresQ
	}
	return sqliteQ
}
