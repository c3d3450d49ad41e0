package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Volume is the durable record of one named persistent volume.
type Volume struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Owner     string    `json:"owner"` // team id once tenants land; "" = the node's single tenant
	SizeMB    int64     `json:"sizeMB"`
	Token     string    `json:"token"` // bearer token of the volume content API
	CreatedAt time.Time `json:"createdAt"`
}

// VolumeMount is one volume mounted into a sandbox (kept on its record so
// that resume and re-adoption mount the same volumes again).
type VolumeMount struct {
	VolumeID string `json:"volumeID"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// ErrExists is returned (wrapped) when a record with the same unique key exists.
var ErrExists = errors.New("store: already exists")

// InsertVolume adds a volume record; a volume of the same owner and name
// gives ErrExists.
func (s *Store) InsertVolume(ctx context.Context, v *Volume) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode volume %s: %w", v.ID, err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO volumes(id, owner, name, doc) VALUES(?,?,?,?)`, v.ID, v.Owner, v.Name, doc)
	if err != nil {
		if n, _ := s.countVolumes(ctx, `owner=? AND name=?`, v.Owner, v.Name); n > 0 {
			return fmt.Errorf("volume %q: %w", v.Name, ErrExists)
		}
		return fmt.Errorf("store volume %s: %w", v.ID, classify(err))
	}
	return nil
}

func (s *Store) countVolumes(ctx context.Context, where string, args ...any) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM volumes WHERE `+where, args...).Scan(&n)
	return n, err
}

// GetVolume returns the volume of owner whose id (or, if byName, name) is key.
func (s *Store) GetVolume(ctx context.Context, owner, key string, byName bool) (*Volume, error) {
	col := "id"
	if byName {
		col = "name"
	}
	return loadDoc[Volume](ctx, s.db, "volume", key, `SELECT doc FROM volumes WHERE owner=? AND `+col+`=?`, owner, key)
}

// Volumes lists the volumes of owner, or of every owner if all.
func (s *Store) Volumes(ctx context.Context, owner string, all bool) ([]*Volume, error) {
	q, args := `SELECT doc FROM volumes WHERE owner=? ORDER BY name`, []any{owner}
	if all {
		q, args = `SELECT doc FROM volumes ORDER BY owner, name`, nil
	}
	out, err := listDocs[Volume](ctx, s.db, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	return out, nil
}

// DeleteVolume removes a volume record; a missing one is not an error.
func (s *Store) DeleteVolume(ctx context.Context, id string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM volumes WHERE id=?`, id); err != nil {
		return fmt.Errorf("delete volume %s: %w", id, err)
	}
	return nil
}
