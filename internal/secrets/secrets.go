// Package secrets keeps a team's secrets (E2B's Secret API): names and
// metadata in the store, values sealed with AES-256-GCM under a key that is
// not in the database (Sealer, LoadKey). A value is write-only on the API:
// only Value (the egress interceptor, at request time) ever opens one, and
// no error, log line or audit record made here holds a value.
package secrets

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sbx-dev/sbx/internal/store"
)

// Errors of the Manager, mapped to statuses by the API.
var (
	ErrNotFound = errors.New("secret not found")
	ErrInvalid  = errors.New("invalid secret")
	ErrExists   = errors.New("secret exists")
	ErrLimit    = errors.New("too many secrets")
)

// MaxPerTeam bounds a team's secrets (each up to ≈ 25 KiB on the shared
// disk); a var for tests.
var MaxPerTeam = 1000

// Limits on what a secret may hold (E2B's SecretMetadata limits).
const (
	MaxNameBytes      = 128
	MaxValueBytes     = 16 << 10
	MaxMetaEntries    = 32
	MaxMetaKeyBytes   = 128
	MaxMetaValueBytes = 1024
	MaxMetaBytes      = 8192
	DefaultPageSize   = 100
	MaxPageSize       = 100
	idPrefix          = "sec_"
)

// Info is a secret's metadata: never its value.
type Info = store.Secret

// Manager is the secrets of every team on a node. Safe for concurrent use.
type Manager struct {
	st   *store.Store
	seal *Sealer
	now  func() time.Time
	// creating serialises Create, so that its count of the team's secrets
	// still holds at the insert.
	creating sync.Mutex
}

// New returns a Manager on st sealing values with seal.
func New(st *store.Store, seal *Sealer) *Manager {
	return &Manager{st: st, seal: seal, now: time.Now}
}

// aad binds a sealed value to its record.
func aad(team, id string) []byte { return []byte("sbx-secret\x00" + team + "\x00" + id) }

// Create stores a new secret (version 1) for team.
func (m *Manager) Create(ctx context.Context, team, name, value string, meta map[string]string) (*Info, error) {
	if !utf8.ValidString(name) {
		return nil, fmt.Errorf("%w: a name is UTF-8 without '{', '}' or control characters", ErrInvalid)
	}
	name = strings.ToLower(name)
	if err := firstErr(ValidName(name), checkValue(value), checkMeta(meta)); err != nil {
		return nil, err
	}
	m.creating.Lock() // the count holds until the insert (across nodes it may pass by a few)
	defer m.creating.Unlock()
	if n, err := m.st.CountSecrets(ctx, team); err != nil {
		return nil, err
	} else if n >= MaxPerTeam {
		return nil, fmt.Errorf("%w: a team holds at most %d secrets; delete some", ErrLimit, MaxPerTeam)
	}
	now := m.now().UTC()
	sec := &Info{ID: newID(), Owner: team, Name: name, Version: 1, Metadata: orEmpty(meta), CreatedAt: now, UpdatedAt: now}
	err := m.st.InsertSecret(ctx, sec, m.seal.Seal([]byte(value), aad(team, sec.ID)))
	if errors.Is(err, store.ErrExists) {
		return nil, fmt.Errorf("%w: a secret named %q exists", ErrExists, name)
	}
	return sec, err
}

// Update stores value as ref's next version; meta, when not nil, replaces
// the metadata.
func (m *Manager) Update(ctx context.Context, team, ref, value string, meta map[string]string) (*Info, error) {
	if err := firstErr(checkValue(value), checkMeta(meta)); err != nil {
		return nil, err
	}
	sec, _, err := m.get(ctx, team, ref)
	if err != nil {
		return nil, err
	}
	sec.Version++
	sec.UpdatedAt = m.now().UTC()
	if meta != nil {
		sec.Metadata = meta
	}
	if err := m.st.UpdateSecret(ctx, sec, m.seal.Seal([]byte(value), aad(team, sec.ID))); err != nil {
		return nil, mapStore(err, ref)
	}
	return sec, nil
}

// Get returns the metadata of team's secret ref (an id or a name).
func (m *Manager) Get(ctx context.Context, team, ref string) (*Info, error) {
	sec, _, err := m.get(ctx, team, ref)
	return sec, err
}

// Delete removes team's secret ref; sandboxes whose rules name it then
// fail closed on their next matching request.
func (m *Manager) Delete(ctx context.Context, team, ref string) error {
	sec, _, err := m.get(ctx, team, ref)
	if err != nil {
		return err
	}
	return mapStore(m.st.DeleteSecret(ctx, team, sec.ID), ref)
}

// List returns up to limit (DefaultPageSize when 0, at most MaxPageSize)
// of team's secrets by name after the page token, and the token of the
// next page ("" at the end).
func (m *Manager) List(ctx context.Context, team, token string, limit int) ([]*Info, string, error) {
	if limit <= 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	after, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, "", fmt.Errorf("%w: bad nextToken", ErrInvalid)
	}
	out, err := m.st.Secrets(ctx, team, string(after), limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = base64.RawURLEncoding.EncodeToString([]byte(out[limit-1].Name))
	}
	return out, next, nil
}

// Value opens the current value of team's secret name, for the egress
// interceptor only. A missing secret is ErrNotFound naming it.
func (m *Manager) Value(ctx context.Context, team, name string) (string, error) {
	sec, sealed, err := m.st.GetSecret(ctx, team, strings.ToLower(name), true)
	if err != nil {
		return "", mapStore(err, name)
	}
	v, err := m.seal.Open(sealed, aad(team, sec.ID))
	if err != nil {
		return "", fmt.Errorf("secret %q: %w", name, err)
	}
	return string(v), nil
}

// Exists reports whether team has a secret named name.
func (m *Manager) Exists(ctx context.Context, team, name string) (bool, error) {
	_, _, err := m.st.GetSecret(ctx, team, strings.ToLower(name), true)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// get resolves ref as an id (sec_…) or else a name.
func (m *Manager) get(ctx context.Context, team, ref string) (*Info, []byte, error) {
	byName := !strings.HasPrefix(ref, idPrefix)
	key := ref
	if byName {
		key = strings.ToLower(ref)
	}
	sec, sealed, err := m.st.GetSecret(ctx, team, key, byName)
	if err != nil {
		return nil, nil, mapStore(err, ref)
	}
	return sec, sealed, nil
}

func mapStore(err error, ref string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %q", ErrNotFound, truncate(ref, 64))
	}
	return err
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return idPrefix + hex.EncodeToString(b)
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// ValidName checks a (lower-cased) secret name as E2B does: 1..MaxNameBytes
// bytes of UTF-8 without '{', '}' or control characters, and not the id
// prefix "sec_".
func ValidName(name string) error {
	switch {
	case name == "" || len(name) > MaxNameBytes:
		return fmt.Errorf("%w: a name is 1 to %d bytes", ErrInvalid, MaxNameBytes)
	case strings.HasPrefix(name, idPrefix):
		return fmt.Errorf("%w: the prefix %q is reserved for secret ids", ErrInvalid, idPrefix)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool {
		return r == '{' || r == '}' || unicode.IsControl(r)
	}):
		return fmt.Errorf("%w: a name is UTF-8 without '{', '}' or control characters", ErrInvalid)
	}
	return nil
}

// checkValue bounds a value; the error never quotes it.
func checkValue(v string) error {
	if v == "" || len(v) > MaxValueBytes {
		return fmt.Errorf("%w: a value is 1 to %d bytes", ErrInvalid, MaxValueBytes)
	}
	return nil
}

func checkMeta(meta map[string]string) error {
	if len(meta) > MaxMetaEntries {
		return fmt.Errorf("%w: metadata has at most %d entries", ErrInvalid, MaxMetaEntries)
	}
	total := 0
	for k, v := range meta {
		total += len(k) + len(v)
		if k == "" || len(k) > MaxMetaKeyBytes || len(v) > MaxMetaValueBytes {
			return fmt.Errorf("%w: metadata keys are 1 to %d bytes, values at most %d", ErrInvalid, MaxMetaKeyBytes, MaxMetaValueBytes)
		}
	}
	if total > MaxMetaBytes {
		return fmt.Errorf("%w: metadata is at most %d bytes in all", ErrInvalid, MaxMetaBytes)
	}
	return nil
}
