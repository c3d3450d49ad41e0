package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// loadDoc runs query, which selects one JSON doc column, and decodes the
// row into a new T. No row is ErrNotFound, named by kind and key.
func loadDoc[T any](ctx context.Context, db querier, kind, key, query string, args ...any) (*T, error) {
	var doc []byte
	err := db.QueryRowContext(ctx, query, args...).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s %s: %w", kind, key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s %s: %w", kind, key, err)
	}
	var v T
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("decode %s record: %w", kind, err)
	}
	return &v, nil
}
