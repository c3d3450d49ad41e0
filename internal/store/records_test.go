package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func testTemplates(t *testing.T, be backend) {
	ctx := context.Background()
	s := be.fresh(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, id := range []string{"tb", "tA", "ta"} { // byte order: tA < ta < tb
		if err := s.PutTemplate(ctx, &TemplateRec{ID: id, Names: []string{id + "-name"}, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := s.Templates(ctx)
	if err != nil || len(ts) != 3 || ts[0].ID != "tA" || ts[1].ID != "ta" {
		t.Fatalf("Templates (byte order) = %v, %v", ts, err)
	}
	b1 := &BuildRec{ID: "b1", TemplateID: "ta", Status: "ready", Layers: []string{"l1"}, CreatedAt: now}
	b2 := &BuildRec{ID: "b2", TemplateID: "ta", Status: "building", CreatedAt: now.Add(time.Second)}
	for _, b := range []*BuildRec{b2, b1} {
		if err := s.PutBuild(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutTag(ctx, TagRec{TemplateID: "ta", Tag: "latest", BuildID: "b1", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTag(ctx, TagRec{TemplateID: "ta", Tag: "latest", BuildID: "b2", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	tags, err := s.Tags(ctx, "ta")
	if err != nil || len(tags) != 1 || tags[0].BuildID != "b2" || !tags[0].CreatedAt.Equal(now) {
		t.Fatalf("Tags = %+v, %v", tags, err)
	}
	bs, err := s.Builds(ctx, "ta")
	if err != nil || len(bs) != 2 || bs[0].ID != "b1" {
		t.Fatalf("Builds (oldest first) = %v, %v", bs, err)
	}
	// BuildsOf and TagsOf: the same, for many templates in one query,
	// past one chunk of ids; templates not named are not read.
	many := []string{"tb"}
	for i := range inChunk + 10 {
		many = append(many, fmt.Sprintf("none%d", i))
	}
	many = append(many, "ta")
	if bo, err := s.BuildsOf(ctx, many); err != nil || len(bo) != 1 || len(bo["ta"]) != 2 || bo["ta"][0].ID != "b1" {
		t.Fatalf("BuildsOf = %v, %v", bo, err)
	}
	if to, err := s.TagsOf(ctx, many); err != nil || len(to) != 1 || to["ta"][0].BuildID != "b2" {
		t.Fatalf("TagsOf = %v, %v", to, err)
	}
	if bo, err := s.BuildsOf(ctx, []string{"tb"}); err != nil || len(bo) != 0 {
		t.Fatalf("BuildsOf(tb) = %v, %v", bo, err)
	}
	if err := s.DeleteTemplate(ctx, "ta"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Build(ctx, "b1")
	if err != nil || !got.Orphan || got.Layers[0] != "l1" {
		t.Fatalf("build of a deleted template must stay, orphaned: %+v, %v", got, err)
	}
	if tags, _ := s.Tags(ctx, "ta"); len(tags) != 0 {
		t.Fatalf("tags of a deleted template: %v", tags)
	}
	if err := s.DeleteBuild(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Build(ctx, "b1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted build: %v", err)
	}
}

func testTeams(t *testing.T, be backend) {
	ctx := context.Background()
	s := be.fresh(t)
	if err := s.PutTeam(ctx, &Team{ID: "t1", Name: "one", Quota: Quota{Sandboxes: 3}}); err != nil {
		t.Fatal(err)
	}
	k := &APIKey{ID: "k1", Team: "t1", Hash: "h1", Prefix: "e2b_"}
	if err := s.PutAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAPIKey(ctx, &APIKey{ID: "k2", Team: "t2", Hash: "h1"}); err == nil {
		t.Fatal("a second key with the same hash was stored")
	}
	for hash, want := range map[string]string{"h1": "t1", "h2": ""} {
		if team, err := s.KeyTeam(ctx, hash); err != nil || team != want {
			t.Fatalf("KeyTeam(%s) = %q %v, want %q", hash, team, err, want)
		}
	}
	if err := s.SetTemplateOwner(ctx, "tpl", "t1"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTemplateOwner(ctx, "tpl", "t2"); err != nil {
		t.Fatal(err)
	}
	if team, err := s.TemplateOwner(ctx, "tpl"); err != nil || team != "t1" {
		t.Fatalf("owner is set once: %q, %v", team, err)
	}
	if err := s.DeleteAPIKey(ctx, "t2", "k1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another team's key: %v", err)
	}
	// An update (a last-used time, a rename) of a revoked key does not bring it back.
	k3 := &APIKey{ID: "k3", Team: "t1", Hash: "h3"}
	if err := s.PutAPIKey(ctx, k3); err != nil {
		t.Fatal(err)
	}
	k3.LastUsed = time.Now().UTC()
	if err := s.UpdateAPIKey(ctx, k3); err != nil {
		t.Fatal(err)
	}
	if keys, _ := s.APIKeys(ctx); len(keys) != 2 || !keys[1].LastUsed.Equal(k3.LastUsed) {
		t.Fatalf("touched key: %+v", keys)
	}
	if err := s.DeleteAPIKey(ctx, "t1", "k3"); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateAPIKey(ctx, k3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of a revoked key: %v", err)
	}
	if team, err := s.KeyTeam(ctx, "h3"); err != nil || team != "" {
		t.Fatalf("a revoked key touched is back: %q %v", team, err)
	}
	if err := s.DeleteTeam(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	keys, _ := s.APIKeys(ctx)
	teams, _ := s.Teams(ctx)
	team, _ := s.TemplateOwner(ctx, "tpl")
	if len(keys) != 0 || len(teams) != 0 || team != "" {
		t.Fatalf("after DeleteTeam: keys %v teams %v owner %q", keys, teams, team)
	}
	if err := s.DeleteTeam(ctx, "t1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown team: %v", err)
	}
}

func testVolumes(t *testing.T, be backend) {
	ctx := context.Background()
	s := be.fresh(t)
	v := &Volume{ID: "v1", Name: "data", Owner: "t1", SizeMB: 10}
	if err := s.InsertVolume(ctx, v); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertVolume(ctx, &Volume{ID: "v2", Name: "data", Owner: "t1"}); !errors.Is(err, ErrExists) {
		t.Fatalf("same owner and name: %v, want ErrExists", err)
	}
	if err := s.InsertVolume(ctx, &Volume{ID: "v3", Name: "data", Owner: "t2"}); err != nil {
		t.Fatalf("same name, other owner: %v", err)
	}
	if got, err := s.GetVolume(ctx, "t1", "data", true); err != nil || got.ID != "v1" {
		t.Fatalf("by name: %+v, %v", got, err)
	}
	if _, err := s.GetVolume(ctx, "t2", "v1", false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another owner's volume: %v", err)
	}
	all, err := s.Volumes(ctx, "", true)
	if err != nil || len(all) != 2 {
		t.Fatalf("all volumes: %v, %v", all, err)
	}
	if err := s.DeleteVolume(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	if mine, _ := s.Volumes(ctx, "t1", false); len(mine) != 0 {
		t.Fatalf("deleted volume listed: %v", mine)
	}
}
