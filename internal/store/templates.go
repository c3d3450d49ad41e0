package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TemplateRec is the durable record of a user-built template (E2B's
// Template): its names, visibility and usage. Its builds are BuildRecs.
type TemplateRec struct {
	ID            string    `json:"id"`
	Names         []string  `json:"names"` // aliases; the first is the name
	Public        bool      `json:"public"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	LastSpawnedAt time.Time `json:"lastSpawnedAt,omitzero"`
	SpawnCount    int64     `json:"spawnCount"`
}

// BuildRec is one build of a template: its request, its state, and once
// ready the layers (bottom first) and defaults sandboxes start with.
type BuildRec struct {
	ID         string          `json:"id"`
	TemplateID string          `json:"templateID"`
	Status     string          `json:"status"` // waiting, building, ready, error
	Spec       json.RawMessage `json:"spec,omitempty"`
	Tags       []string        `json:"tags,omitempty"` // tags it gets when ready (besides "latest")
	// Orphan: its template was deleted; the build is kept (unlisted) while
	// sandboxes or snapshots still run on it, then collected.
	Orphan     bool     `json:"orphan,omitempty"`
	CPUCount   int      `json:"cpuCount"`
	MemoryMB   int      `json:"memoryMB"`
	DiskSizeMB int      `json:"diskSizeMB"`
	Layers     []string `json:"layers,omitempty"`
	// LayerSizes are the sizes of Layers (same order), recorded when the
	// build is ready: the layers are on the disk of the node that built
	// them, and every node counts them against the team's disk quota.
	LayerSizes []int64     `json:"layerSizes,omitempty"`
	Config     BuildConfig `json:"config"`
	// Digest is the manifest digest of the build pushed to the template
	// registry ("" if none): other nodes pull it by this digest.
	Digest     string `json:"digest,omitempty"`
	Reason     string `json:"reason,omitempty"`
	ReasonStep string `json:"reasonStep,omitempty"`
	// LogBytes is the size of the build's log file, recorded when the
	// build ends: the log is on the disk of the node that ran the build
	// only, and every node counts it against the team's disk quota.
	LogBytes   int64     `json:"logBytes,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// BuildConfig is what a finished build gives every sandbox of it.
type BuildConfig struct {
	Env      map[string]string `json:"env,omitempty"`
	Workdir  string            `json:"workdir,omitempty"`
	User     string            `json:"user,omitempty"`
	StartCmd string            `json:"startCmd,omitempty"`
	ReadyCmd string            `json:"readyCmd,omitempty"`
	// StartAs, if set, is the user, workdir and env the start and ready
	// commands run as, in and with instead of User, Workdir and Env: those
	// of the template they were inherited from (E2B runs an inherited start
	// command with its base template's context, envs included).
	StartAs *StartContext `json:"startAs,omitempty"`
	// Snapshot is a snapshot (memory included) of a sandbox of this build
	// whose start command is ready: creates on its runtime with its
	// resources restore it instead of starting cold.
	Snapshot string `json:"snapshot,omitempty"`
}

// StartContext is the user, workdir ("~": that user's home) and env a
// start command runs as, in and with. Env is nil in the records of builds
// made before it was kept: their commands take the template's env.
type StartContext struct {
	User    string            `json:"user,omitempty"`
	Workdir string            `json:"workdir,omitempty"`
	Env     map[string]string `json:"env"`
}

// TagRec names one build of a template ("latest" is the default tag).
type TagRec struct {
	TemplateID string    `json:"templateID"`
	Tag        string    `json:"tag"`
	BuildID    string    `json:"buildID"`
	CreatedAt  time.Time `json:"createdAt"`
}

// PutTemplate inserts or replaces a template record.
func (s *Store) PutTemplate(ctx context.Context, t *TemplateRec) error {
	return s.putDoc(ctx, `INSERT INTO templates(id, doc) VALUES(?,?) ON CONFLICT(id) DO UPDATE SET doc=excluded.doc`, t.ID, t)
}

// Templates returns every template record.
func (s *Store) Templates(ctx context.Context) ([]*TemplateRec, error) {
	return listDocs[TemplateRec](ctx, s.db, `SELECT doc FROM templates ORDER BY id`)
}

// DeleteTemplate removes a template and its tags; its builds stay, marked
// orphan, for the sandboxes that still run on them (DeleteBuild collects).
func (s *Store) DeleteTemplate(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{`DELETE FROM template_tags WHERE template_id=?`,
		s.db.pick(`UPDATE builds SET doc=json_set(doc, '$.orphan', json('true')) WHERE template_id=?`,
			`UPDATE builds SET doc=jsonb_set(doc::jsonb, '{orphan}', 'true')::text WHERE template_id=?`), `DELETE FROM templates WHERE id=?`} {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return fmt.Errorf("delete template %s: %w", id, classify(err))
		}
	}
	return classify(tx.Commit())
}

// PutBuild inserts or replaces a build record (recording s's node on insert).
func (s *Store) PutBuild(ctx context.Context, b *BuildRec) error {
	return s.putDoc(ctx, `INSERT INTO builds(id, template_id, created_at, node, doc) VALUES(?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET doc=excluded.doc`, b.ID, b.TemplateID, b.CreatedAt.UnixNano(), s.node(), b)
}

// OwnBuilds returns the builds s's node made (its first PutBuild names the
// node), oldest first: on a cluster, what a node's restart and GC may
// change; every build on a single node.
func (s *Store) OwnBuilds(ctx context.Context) ([]*BuildRec, error) {
	return listDocs[BuildRec](ctx, s.db, `SELECT doc FROM builds WHERE node=? ORDER BY created_at, id`, s.node())
}

// Build returns one build record (ErrNotFound if missing).
func (s *Store) Build(ctx context.Context, id string) (*BuildRec, error) {
	bs, err := listDocs[BuildRec](ctx, s.db, `SELECT doc FROM builds WHERE id=?`, id)
	if err != nil {
		return nil, err
	}
	if len(bs) == 0 {
		return nil, fmt.Errorf("build %s: %w", id, ErrNotFound)
	}
	return bs[0], nil
}

// Builds returns the builds of a template ("" for all), oldest first.
func (s *Store) Builds(ctx context.Context, templateID string) ([]*BuildRec, error) {
	if templateID == "" {
		return listDocs[BuildRec](ctx, s.db, `SELECT doc FROM builds ORDER BY created_at, id`)
	}
	return listDocs[BuildRec](ctx, s.db, `SELECT doc FROM builds WHERE template_id=? ORDER BY created_at, id`, templateID)
}

// DeleteBuild removes a build record.
func (s *Store) DeleteBuild(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM builds WHERE id=?`, id)
	return classify(err)
}

// PutTag points tag of a template at a build.
func (s *Store) PutTag(ctx context.Context, t TagRec) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO template_tags(template_id, tag, build_id, created_at) VALUES(?,?,?,?)
		ON CONFLICT(template_id, tag) DO UPDATE SET build_id=excluded.build_id, created_at=excluded.created_at`,
		t.TemplateID, t.Tag, t.BuildID, t.CreatedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("store tag %s: %w", t.Tag, classify(err))
	}
	return nil
}

// DeleteTag removes a tag (missing: not an error).
func (s *Store) DeleteTag(ctx context.Context, templateID, tag string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM template_tags WHERE template_id=? AND tag=?`, templateID, tag)
	return classify(err)
}

// Tags returns the tags of a template ("" for all).
func (s *Store) Tags(ctx context.Context, templateID string) ([]TagRec, error) {
	q, args := `SELECT template_id, tag, build_id, created_at FROM template_tags ORDER BY created_at, tag`, []any{}
	if templateID != "" {
		q, args = `SELECT template_id, tag, build_id, created_at FROM template_tags WHERE template_id=? ORDER BY created_at, tag`, []any{templateID}
	}
	return s.tags(ctx, q, args...)
}

// tags runs q, a query of template_tags' template_id, tag, build_id and
// created_at.
func (s *Store) tags(ctx context.Context, q string, args ...any) ([]TagRec, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TagRec
	for rows.Next() {
		var t TagRec
		var at int64
		if err := rows.Scan(&t.TemplateID, &t.Tag, &t.BuildID, &at); err != nil {
			return nil, err
		}
		t.CreatedAt = time.Unix(0, at).UTC()
		out = append(out, t)
	}
	return out, rows.Err()
}

func (s *Store) putDoc(ctx context.Context, q, id string, args ...any) error {
	v := args[len(args)-1]
	doc, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", id, err)
	}
	vals := append([]any{id}, args[:len(args)-1]...)
	if _, err := s.db.ExecContext(ctx, q, append(vals, doc)...); err != nil {
		return fmt.Errorf("store %s: %w", id, classify(err))
	}
	return nil
}

func listDocs[T any](ctx context.Context, db querier, q string, args ...any) ([]*T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		v := new(T)
		if err := json.Unmarshal(doc, v); err != nil {
			return nil, fmt.Errorf("decode record: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// inChunk bounds the ids one IN (...) query names (SQLite and PostgreSQL
// both take far more parameters).
const inChunk = 500

// BuildsOf returns the build records of the templates ids, by template,
// each in created order: one query per inChunk ids, not one per template.
func (s *Store) BuildsOf(ctx context.Context, ids []string) (map[string][]*BuildRec, error) {
	out := map[string][]*BuildRec{}
	for c := range slices.Chunk(ids, inChunk) {
		bs, err := listDocs[BuildRec](ctx, s.db, `SELECT doc FROM builds WHERE template_id IN (`+marks(len(c))+`) ORDER BY created_at, id`, anys(c)...)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			out[b.TemplateID] = append(out[b.TemplateID], b)
		}
	}
	return out, nil
}

// TagsOf returns the tags of the templates ids, by template, each in
// created order (as Tags).
func (s *Store) TagsOf(ctx context.Context, ids []string) (map[string][]TagRec, error) {
	out := map[string][]TagRec{}
	for c := range slices.Chunk(ids, inChunk) {
		ts, err := s.tags(ctx, `SELECT template_id, tag, build_id, created_at FROM template_tags WHERE template_id IN (`+marks(len(c))+`) ORDER BY created_at, tag`, anys(c)...)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out[t.TemplateID] = append(out[t.TemplateID], t)
		}
	}
	return out, nil
}

// marks is n comma-separated placeholders.
func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
