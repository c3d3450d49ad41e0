package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Secret is the durable record of one team secret. Its value is kept apart
// from the JSON doc, sealed (package secrets): this package never sees a
// plaintext value.
type Secret struct {
	ID        string            `json:"id"`
	Owner     string            `json:"owner"`
	Name      string            `json:"name"`
	Version   int64             `json:"version"`
	Metadata  map[string]string `json:"metadata"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
}

// CountSecrets counts owner's secrets.
func (s *Store) CountSecrets(ctx context.Context, owner string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM secrets WHERE owner=?`, owner).Scan(&n); err != nil {
		return 0, fmt.Errorf("count secrets: %w", classify(err))
	}
	return n, nil
}

// InsertSecret adds a secret record with its sealed value; a secret of the
// same owner and name gives ErrExists.
func (s *Store) InsertSecret(ctx context.Context, sec *Secret, sealed []byte) error {
	doc, err := json.Marshal(sec)
	if err != nil {
		return fmt.Errorf("encode secret %s: %w", sec.ID, err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO secrets(id, owner, name, doc, sealed) VALUES(?,?,?,?,?)`,
		sec.ID, sec.Owner, sec.Name, doc, sealed)
	if err != nil {
		var n int
		if s.db.QueryRowContext(ctx, `SELECT count(*) FROM secrets WHERE owner=? AND name=?`, sec.Owner, sec.Name).Scan(&n) == nil && n > 0 {
			return fmt.Errorf("secret %q: %w", sec.Name, ErrExists)
		}
		return fmt.Errorf("store secret %s: %w", sec.ID, classify(err))
	}
	return nil
}

// UpdateSecret replaces the doc and sealed value of owner's secret sec.ID;
// a missing one is ErrNotFound.
func (s *Store) UpdateSecret(ctx context.Context, sec *Secret, sealed []byte) error {
	doc, err := json.Marshal(sec)
	if err != nil {
		return fmt.Errorf("encode secret %s: %w", sec.ID, err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE secrets SET doc=?, sealed=? WHERE id=? AND owner=?`, doc, sealed, sec.ID, sec.Owner)
	if err != nil {
		return fmt.Errorf("store secret %s: %w", sec.ID, classify(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("secret %s: %w", sec.ID, ErrNotFound)
	}
	return nil
}

// GetSecret returns owner's secret whose id (or, if byName, name) is key,
// with its sealed value.
func (s *Store) GetSecret(ctx context.Context, owner, key string, byName bool) (*Secret, []byte, error) {
	col := "id"
	if byName {
		col = "name"
	}
	var doc, sealed []byte
	err := s.db.QueryRowContext(ctx, `SELECT doc, sealed FROM secrets WHERE owner=? AND `+col+`=?`, owner, key).Scan(&doc, &sealed)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil, fmt.Errorf("secret: %w", ErrNotFound)
		}
		return nil, nil, fmt.Errorf("load secret: %w", err)
	}
	var sec Secret
	if err := json.Unmarshal(doc, &sec); err != nil {
		return nil, nil, fmt.Errorf("decode secret record: %w", err)
	}
	return &sec, sealed, nil
}

// Secrets lists up to limit secrets of owner whose names sort after after,
// by name.
func (s *Store) Secrets(ctx context.Context, owner, after string, limit int) ([]*Secret, error) {
	out, err := listDocs[Secret](ctx, s.db,
		`SELECT doc FROM secrets WHERE owner=? AND name>? ORDER BY name LIMIT ?`, owner, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return out, nil
}

// DeleteSecret removes owner's secret id; a missing one is ErrNotFound.
func (s *Store) DeleteSecret(ctx context.Context, owner, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM secrets WHERE id=? AND owner=?`, id, owner)
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("secret %s: %w", id, ErrNotFound)
	}
	return nil
}
