package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/store"
)

const testValue = "sk-live-VERY-SECRET-0123456789"

func newManager(t *testing.T) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, _, err := LoadKey(filepath.Join(t.TempDir(), "k"), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return New(st, s), dir
}

// TestSecretsCRUD: create, get by id and name, update bumps the version,
// another team sees nothing, delete; the value is sealed in the database.
func TestSecretsCRUD(t *testing.T) {
	ctx := context.Background()
	m, dir := newManager(t)
	i, err := m.Create(ctx, "a", "OpenAI-Key", testValue, map[string]string{"env": "prod"})
	if err != nil || i.Name != "openai-key" || i.Version != 1 || !strings.HasPrefix(i.ID, "sec_") {
		t.Fatalf("create = %+v %v", i, err)
	}
	if _, err := m.Create(ctx, "a", "openai-key", "x", nil); !errors.Is(err, ErrExists) {
		t.Fatalf("dup create = %v", err)
	}
	if _, err := m.Create(ctx, "b", "openai-key", "x", nil); err != nil {
		t.Fatalf("same name, other team = %v", err)
	}
	for _, ref := range []string{i.ID, "openai-key", "OPENAI-KEY"} {
		if g, err := m.Get(ctx, "a", ref); err != nil || g.ID != i.ID {
			t.Errorf("get %q = %+v %v", ref, g, err)
		}
	}
	if _, err := m.Get(ctx, "b", i.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("other team's id = %v, want not found", err)
	}
	u, err := m.Update(ctx, "a", "openai-key", "v2", nil)
	if err != nil || u.Version != 2 || u.Metadata["env"] != "prod" {
		t.Fatalf("update = %+v %v", u, err)
	}
	if v, err := m.Value(ctx, "a", "OpenAI-Key"); err != nil || v != "v2" {
		t.Fatalf("value = %q %v", v, err)
	}
	if _, err := m.Update(ctx, "b", i.ID, "x", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("update other team's = %v", err)
	}
	assertNotInDB(t, dir, testValue)
	if err := m.Delete(ctx, "b", i.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete other team's = %v", err)
	}
	if err := m.Delete(ctx, "a", i.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Value(ctx, "a", "openai-key"); !errors.Is(err, ErrNotFound) {
		t.Errorf("value after delete = %v", err)
	}
}

func assertNotInDB(t *testing.T, dir, v string) {
	t.Helper()
	for _, f := range []string{"sbx.db", "sbx.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if bytes.Contains(b, []byte(v)) {
			t.Fatalf("plaintext value in %s", f)
		}
	}
}

func TestSecretsValidation(t *testing.T) {
	ctx := context.Background()
	m, _ := newManager(t)
	big := map[string]string{}
	for i := range 33 {
		big[string(rune('a'+i%26))+strings.Repeat("x", i)] = "v"
	}
	for _, c := range []struct {
		name, value string
		meta        map[string]string
	}{
		{"", "v", nil}, {"a{b", "v", nil}, {"a}b", "v", nil}, {"a\nb", "v", nil}, {"a\x7fb", "v", nil}, {"a\xffb", "v", nil},
		{"sec_x", "v", nil}, {strings.Repeat("n", MaxNameBytes+1), "v", nil},
		{"ok", "", nil}, {"ok", strings.Repeat("v", MaxValueBytes+1), nil},
		{"ok", "v", big}, {"ok", "v", map[string]string{"": "v"}},
		{"ok", "v", map[string]string{"k": strings.Repeat("v", MaxMetaValueBytes+1)}},
	} {
		_, err := m.Create(ctx, "a", c.name, c.value, c.meta)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("create(%q, %d bytes) = %v, want ErrInvalid", c.name, len(c.value), err)
		}
		if err != nil && len(c.value) > 1 && strings.Contains(err.Error(), c.value) {
			t.Errorf("error quotes the value: %v", err)
		}
	}
}

// TestSecretsList: pages by name with a token, per team.
func TestSecretsList(t *testing.T) {
	ctx := context.Background()
	m, _ := newManager(t)
	for _, n := range []string{"e", "a", "d", "c", "b"} {
		if _, err := m.Create(ctx, "a", n, "v", nil); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = m.Create(ctx, "b", "z", "v", nil)
	var got []string
	tok := ""
	for pages := 0; ; pages++ {
		list, next, err := m.List(ctx, "a", tok, 2)
		if err != nil || pages > 5 {
			t.Fatal(err, pages)
		}
		for _, i := range list {
			got = append(got, i.Name)
		}
		if next == "" {
			break
		}
		tok = next
	}
	if strings.Join(got, "") != "abcde" {
		t.Fatalf("pages = %v", got)
	}
	if _, _, err := m.List(ctx, "a", "!!", 2); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad token = %v", err)
	}
}

// TestSealer: round trip, a tampered byte or another record's aad fails,
// and nonces differ.
func TestSealer(t *testing.T) {
	s, _ := NewSealer(bytes.Repeat([]byte{7}, KeySize))
	a := s.Seal([]byte(testValue), []byte("t\x00id1"))
	b := s.Seal([]byte(testValue), []byte("t\x00id1"))
	if bytes.Equal(a, b) || bytes.Contains(a, []byte(testValue)) {
		t.Fatal("nonce reused or plaintext visible")
	}
	if v, err := s.Open(a, []byte("t\x00id1")); err != nil || string(v) != testValue {
		t.Fatalf("open = %q %v", v, err)
	}
	a[len(a)-1] ^= 1
	for _, c := range []struct {
		sealed []byte
		aad    string
	}{{a, "t\x00id1"}, {b, "t\x00id2"}, {b[:5], "t\x00id1"}} {
		if _, err := s.Open(c.sealed, []byte(c.aad)); err == nil {
			t.Errorf("open(%q) succeeded", c.aad)
		}
	}
	other, _ := NewSealer(bytes.Repeat([]byte{8}, KeySize))
	if _, err := other.Open(b, []byte("t\x00id1")); err == nil {
		t.Error("another key opened it")
	}
}

// TestLoadKey: generated once 0600 and reused; env wins; bad input is an
// error that does not echo the key material.
func TestLoadKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "secrets.key")
	k1, gen, err := LoadKey(p, "")
	if err != nil || !gen || len(k1) != KeySize {
		t.Fatal(err, gen)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", fi.Mode())
	}
	k2, gen, err := LoadKey(p, "")
	if err != nil || gen || !bytes.Equal(k1, k2) {
		t.Fatal("not reused", err, gen)
	}
	env := strings.Repeat("ab", KeySize)
	if k, _, err := LoadKey(p, env); err != nil || k[0] != 0xab {
		t.Fatal("env not used", err)
	}
	for _, bad := range []string{"zz-not-a-key-zz", strings.Repeat("ab", KeySize-1)} {
		if _, _, err := LoadKey(p, bad); err == nil || strings.Contains(err.Error(), bad) {
			t.Errorf("LoadKey(env %q) = %v", bad, err)
		}
	}
	_ = os.WriteFile(p, []byte("short"), 0o600)
	if _, _, err := LoadKey(p, ""); err == nil || strings.Contains(err.Error(), "short") {
		t.Errorf("bad file = %v", err)
	}
}

func TestExpand(t *testing.T) {
	vals := map[string]string{"key": "K", "my-token": "T"}
	lookup := func(n string) (string, error) {
		if v, ok := vals[n]; ok {
			return v, nil
		}
		return "", ErrNotFound
	}
	for _, c := range []struct {
		in, out string
		err     error
	}{
		{"plain", "plain", nil},
		{"Bearer ${e2b.secrets.key}", "Bearer K", nil},
		{"${e2b.secrets.KEY}:${e2b.secrets.my-token}", "K:T", nil},
		{"${e2b.other}", "${e2b.other}", nil},
		{"$${e2b.secrets.key}}", "$K}", nil},
		{"${e2b.secrets.missing}", "", ErrNotFound},
		{"${e2b.secrets.key", "", ErrPlaceholder},
		{"${e2b.secrets.}", "", ErrPlaceholder},
		{"${e2b.secrets.a\tb}", "", ErrPlaceholder},
		{"${e2b.secrets.My Key}", "", ErrNotFound}, // spaces are allowed in names, as on E2B
		{"${e2b.secrets.${e2b.secrets.key}}", "", ErrPlaceholder},
	} {
		got, err := Expand(c.in, lookup)
		if !errors.Is(err, c.err) || got != c.out {
			t.Errorf("Expand(%q) = %q, %v; want %q, %v", c.in, got, err, c.out, c.err)
		}
	}
	if n, err := Names("a ${e2b.secrets.X} ${e2b.secrets.y}"); err != nil || strings.Join(n, ",") != "x,y" {
		t.Errorf("Names = %v %v", n, err)
	}
}

// TestSecretsPerTeamBounded: a team holding MaxPerTeam secrets is refused
// the next (ErrLimit: 429), also when creates race at the bound; another
// team is unaffected, and a deleted secret makes room.
func TestSecretsPerTeamBounded(t *testing.T) {
	defer func(n int) { MaxPerTeam = n }(MaxPerTeam)
	MaxPerTeam = 4
	ctx := context.Background()
	m, _ := newManager(t)
	errs := make(chan error, 7)
	for i := range 7 {
		go func() {
			_, err := m.Create(ctx, "t1", fmt.Sprint("s", i), testValue, nil)
			errs <- err
		}()
	}
	made, refused := 0, 0
	for range 7 {
		switch err := <-errs; {
		case err == nil:
			made++
		case errors.Is(err, ErrLimit):
			refused++
		default:
			t.Fatalf("create: %v", err)
		}
	}
	if made != 4 || refused != 3 {
		t.Fatalf("7 creates at once: %d made, %d refused; want 4, 3", made, refused)
	}
	if _, err := m.Create(ctx, "t2", "s0", testValue, nil); err != nil {
		t.Fatalf("another team's secret: %v", err)
	}
	list, _, err := m.List(ctx, "t1", "", 0)
	if err != nil || len(list) != 4 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if err := m.Delete(ctx, "t1", list[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, "t1", "again", testValue, nil); err != nil {
		t.Fatalf("a secret after one was deleted: %v", err)
	}
}
