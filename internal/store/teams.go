package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Team is a tenant: every sandbox, template, snapshot and volume record
// names its team. The default team (the admin key's) has the id "" in
// records, so records written before teams existed belong to it.
type Team struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	Quota     Quota     `json:"quota"` // zero fields: the daemon's defaults
}

// Quota bounds one team; a zero field means "the daemon's default" and a
// negative one "unlimited".
type Quota struct {
	Sandboxes     int     `json:"sandboxes,omitempty"`     // live (running, paused excluded)
	VCPU          int     `json:"vcpu,omitempty"`          // summed over live sandboxes
	MemoryMB      int     `json:"memoryMB,omitempty"`      // summed over live sandboxes
	CreatesPerSec float64 `json:"createsPerSec,omitempty"` // token bucket, burst = max(1, rate)
	Builds        int     `json:"builds,omitempty"`        // template builds in flight
	DiskMB        int64   `json:"diskMB,omitempty"`        // volumes + snapshots + paused sandboxes + templates
}

// APIKey is the record of one team API key: its SHA-256, never the key.
type APIKey struct {
	ID        string    `json:"id"`
	Team      string    `json:"team"`
	Name      string    `json:"name"`
	Hash      string    `json:"hash"`   // hex SHA-256 of the key
	Prefix    string    `json:"prefix"` // e.g. "e2b_"
	Suffix    string    `json:"suffix"` // last 4 chars, for the mask
	Length    int       `json:"length"`
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy,omitempty"`
	LastUsed  time.Time `json:"lastUsed,omitzero"`
}

// PutTeam inserts or replaces a team.
func (s *Store) PutTeam(ctx context.Context, t *Team) error {
	return s.putDoc(ctx, `INSERT INTO teams(id, doc) VALUES(?,?) ON CONFLICT(id) DO UPDATE SET doc=excluded.doc`, t.ID, t)
}

// Teams lists every team, in id order.
func (s *Store) Teams(ctx context.Context) ([]*Team, error) {
	return listDocs[Team](ctx, s.db, `SELECT doc FROM teams ORDER BY id`)
}

// DeleteTeam removes a team, its keys, its template ownership rows and its
// secrets in one transaction.
func (s *Store) DeleteTeam(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	res, err := tx.ExecContext(ctx, `DELETE FROM teams WHERE id=?`, id)
	if err != nil {
		return fmt.Errorf("delete team %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("team %s: %w", id, ErrNotFound)
	}
	for _, q := range []string{`DELETE FROM api_keys WHERE team=?`, `DELETE FROM template_owners WHERE team=?`,
		`DELETE FROM secrets WHERE owner=?`} { // a team's secrets go with it
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return fmt.Errorf("delete team %s: %w", id, err)
		}
	}
	return tx.Commit()
}

// PutAPIKey inserts or replaces a key record.
func (s *Store) PutAPIKey(ctx context.Context, k *APIKey) error {
	return s.putDoc(ctx, `INSERT INTO api_keys(id, team, hash, doc) VALUES(?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET team=excluded.team, hash=excluded.hash, doc=excluded.doc`, k.ID, k.Team, k.Hash, k)
}

// UpdateAPIKey rewrites k's record if the key is still stored, else
// ErrNotFound: a key deleted meanwhile (revoked, here or on another node
// of a cluster) stays deleted, where PutAPIKey's upsert would bring it
// back.
func (s *Store) UpdateAPIKey(ctx context.Context, k *APIKey) error {
	doc, err := json.Marshal(k)
	if err != nil {
		return fmt.Errorf("encode %s: %w", k.ID, err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE api_keys SET doc=? WHERE id=? AND team=?`, doc, k.ID, k.Team)
	if err != nil {
		return fmt.Errorf("update api key %s: %w", k.ID, classify(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("api key %s: %w", k.ID, ErrNotFound)
	}
	return nil
}

// APIKeys lists every key record (all teams), oldest first.
func (s *Store) APIKeys(ctx context.Context) ([]*APIKey, error) {
	return listDocs[APIKey](ctx, s.db, `SELECT doc FROM api_keys ORDER BY id`)
}

// DeleteAPIKey removes the key id of team; another team's key or an
// unknown id is ErrNotFound.
func (s *Store) DeleteAPIKey(ctx context.Context, team, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM api_keys WHERE id=? AND team=?`, id, team)
	if err != nil {
		return fmt.Errorf("delete api key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("api key %s: %w", id, ErrNotFound)
	}
	return nil
}

// SetTemplateOwner records the team of a user template (once, at its first
// build request; a template with no row belongs to the default team "").
func (s *Store) SetTemplateOwner(ctx context.Context, templateID, team string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO template_owners(template_id, team) VALUES(?,?)
		ON CONFLICT(template_id) DO NOTHING`, templateID, team)
	if err != nil {
		return fmt.Errorf("template owner %s: %w", templateID, classify(err))
	}
	return nil
}

// CountTemplates returns how many templates team owns (rows of deleted
// templates are not counted).
func (s *Store) CountTemplates(ctx context.Context, team string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM template_owners o JOIN templates t ON t.id=o.template_id
		WHERE o.team=?`, team).Scan(&n)
	return n, classify(err)
}

// TemplateOwner returns the team of templateID ("" when none is recorded).
func (s *Store) TemplateOwner(ctx context.Context, templateID string) (string, error) {
	var team string
	err := s.db.QueryRowContext(ctx, `SELECT team FROM template_owners WHERE template_id=?`, templateID).Scan(&team)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return team, err
}

// TemplateOwners maps every template with an owner row to its team
// (templates without one are the default team's).
func (s *Store) TemplateOwners(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT template_id, team FROM template_owners`)
	if err != nil {
		return nil, fmt.Errorf("template owners: %w", classify(err))
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, team string
		if err := rows.Scan(&id, &team); err != nil {
			return nil, err
		}
		out[id] = team
	}
	return out, rows.Err()
}
