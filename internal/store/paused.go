package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// pausedDoc is what PausedBytes reads of a sandbox record (the fields of
// Sandbox it needs, not its maps).
type pausedDoc struct {
	Team    string `json:"team"`
	Persist struct {
		ImageBytes int64 `json:"imageBytes"`
	} `json:"persist"`
}

// PausedBytes is the size of team's paused sandboxes' images
// (Persist.ImageBytes) on every node sharing the store: one query. On a
// cluster a node holds only its own sandboxes, so a team's disk quota
// counted from them alone let the team keep its quota's worth of paused
// images on each node.
func (s *Store) PausedBytes(ctx context.Context, team string) (int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT doc FROM sandboxes WHERE state=?`, StatePaused.String())
	if err != nil {
		return 0, fmt.Errorf("paused sandboxes: %w", err)
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return 0, fmt.Errorf("paused sandboxes: %w", err)
		}
		var r pausedDoc
		if err := json.Unmarshal(doc, &r); err != nil {
			return 0, fmt.Errorf("decode sandbox record: %w", err)
		}
		if r.Team == team {
			n += r.Persist.ImageBytes
		}
	}
	return n, rows.Err()
}
