package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// backend is one implementation the conformance suite runs against: target
// makes a fresh empty database (a dir, a URL), open opens it.
type backend struct {
	name   string
	target func(t *testing.T) string
	open   func(target string) (*Store, error)
}

var backends = []backend{
	{"sqlite", func(t *testing.T) string { return t.TempDir() }, Open},
	{"postgres", func(t *testing.T) string { return pgtest.URL(t) }, func(url string) (*Store, error) {
		return OpenPostgres(context.Background(), url)
	}},
}

// fresh opens a new empty store of b, closed when t ends.
func (b backend) fresh(t *testing.T) *Store {
	t.Helper()
	return b.mustOpen(t, b.target(t))
}

func (b backend) mustOpen(t *testing.T, target string) *Store {
	t.Helper()
	s, err := b.open(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// conformance is the store's contract: every case runs on every back end.
var conformance = []struct {
	name string
	run  func(t *testing.T, b backend)
}{
	{"sandboxes", testSandboxes},
	{"reopen keeps records", testReopen},
	{"snapshots", testSnapshots},
	{"templates builds tags", testTemplates},
	{"teams keys owners", testTeams},
	{"volumes", testVolumes},
	{"secrets", testSecrets},
	{"migrations once, in order", testMigrationsOnce},
	{"newer schema refused", testNewerSchema},
	{"concurrent opens", testConcurrentOpen},
	{"node leases", testLeases},
	{"fencing and expiry", testFencing},
	{"register over an expired lease", testRegisterExpires},
	{"build owners", testBuildOwners},
	{"shared storage", testSharedStorage},
	{"paused bytes", testPausedBytes},
	{"all snapshots", testAllSnapshots},
}

func TestConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) { c.run(t, b) })
			}
		})
	}
}

func testSandboxes(t *testing.T, be backend) {
	ctx := context.Background()
	s := be.fresh(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := &Sandbox{ID: "a", State: "running", TemplateID: "base", StartedAt: now, EndAt: now.Add(time.Minute), Metadata: map[string]string{"k": "v"}}
	b := &Sandbox{ID: "b", State: "creating", TemplateID: "base", StartedAt: now.Add(time.Second)}
	for _, r := range []*Sandbox{a, b} {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	a.State = "paused"
	if err := s.Put(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "a")
	if err != nil || got.State != "paused" || got.Metadata["k"] != "v" || !got.EndAt.Equal(a.EndAt) {
		t.Fatalf("Get a = %+v, %v", got, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "a" {
		t.Fatalf("List = %v, %v", list, err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get deleted = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatalf("double delete: %v", err)
	}
}

func testReopen(t *testing.T, b backend) {
	ctx := context.Background()
	target := b.target(t)
	s, err := b.open(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, &Sandbox{ID: "x", State: "running"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = b.mustOpen(t, target)
	if _, err := s.Get(ctx, "x"); err != nil {
		t.Fatalf("record lost across reopen: %v", err)
	}
}

func testSnapshots(t *testing.T, be backend) {
	ctx := context.Background()
	s := be.fresh(t)
	now := time.Now().UTC()
	a := &Snapshot{ID: "snapa", Name: "first", SandboxID: "x", CreatedAt: now, Bytes: 10}
	b := &Snapshot{ID: "snapb", SandboxID: "x", CreatedAt: now.Add(time.Second), EnvVars: map[string]string{"K": "v"}}
	for _, r := range []*Snapshot{a, b} {
		if err := s.PutSnapshot(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.TeamSnapshot(ctx, "", "first"); err != nil || got.ID != "snapa" {
		t.Fatalf("by name: %+v %v", got, err)
	}
	if _, err := s.GetSnapshot(ctx, "first"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetSnapshot takes ids only: %v", err)
	}
	if got, err := s.GetSnapshot(ctx, "snapb"); err != nil || got.EnvVars["K"] != "v" {
		t.Fatalf("by id: %+v %v", got, err)
	}
	if _, err := s.TeamSnapshot(ctx, "", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty name must not match unnamed snapshots: %v", err)
	}
	testTeamSnapshotNames(t, s, now)
	list, err := s.ListSnapshots(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "snapb" {
		t.Fatalf("list (newest first): %v %v", list, err)
	}
	if err := s.DeleteSnapshot(ctx, "snapa"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TeamSnapshot(ctx, "", "first"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}
}

// testTeamSnapshotNames: names are per team. Team b's newer snapshot of
// team a's name, and one named after a's id, are never a's; a's lookups
// by name and id stay a's, b's are b's, and a team with neither finds
// nothing (as for a name nobody holds).
func testTeamSnapshotNames(t *testing.T, s *Store, now time.Time) {
	ctx := context.Background()
	for _, r := range []*Snapshot{
		{ID: "snapta", Team: "a", Name: "same", CreatedAt: now},
		{ID: "snaptb", Team: "b", Name: "same", CreatedAt: now.Add(time.Minute)},
		{ID: "snaptc", Team: "b", Name: "snapta", CreatedAt: now.Add(2 * time.Minute)},
	} {
		if err := s.PutSnapshot(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ team, key, want string }{
		{"a", "same", "snapta"}, {"b", "same", "snaptb"}, {"a", "snapta", "snapta"}, {"b", "snapta", "snaptc"},
		{"a", "snaptb", ""}, {"c", "same", ""}, {"", "same", ""},
	} {
		got, err := s.TeamSnapshot(ctx, c.team, c.key)
		if c.want == "" && !errors.Is(err, ErrNotFound) || c.want != "" && (err != nil || got.ID != c.want) {
			t.Errorf("TeamSnapshot(%q, %q) = %+v %v, want %q", c.team, c.key, got, err, c.want)
		}
	}
	if got, err := s.GetSnapshot(ctx, "snapta"); err != nil || got.ID != "snapta" {
		t.Errorf("GetSnapshot(snapta) behind a newer snapshot named so: %+v %v", got, err)
	}
	for _, id := range []string{"snapta", "snaptb", "snaptc"} {
		if err := s.DeleteSnapshot(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}
